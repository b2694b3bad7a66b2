export { AddressNotAllowedError } from "./address-not-allowed-error.js";
export { ConfigError } from "./config-error.js";
export { Ec2Error, type Ec2ErrorKind } from "./ec2-error.js";
export { EniNotFoundError } from "./eni-not-found-error.js";
export { ImdsError } from "./imds-error.js";
export { ImdsHopLimitError } from "./imds-hop-limit-error.js";
export { IpmgrError } from "./ipmgr-error.js";
export { TimeoutError } from "./timeout-error.js";
