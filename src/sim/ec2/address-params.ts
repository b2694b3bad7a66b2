import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { addressFamily, canonicalAddress } from "../ip-math.js";

/** Canonical, de-duplicated addresses of one family; a malformed one fails the whole request. */
export function canonicalAddresses(values: readonly string[], family: 4 | 6, parameter: string): string[] {
  const out: string[] = [];
  for (const value of values) {
    const canonical = addressFamily(value) === family ? canonicalAddress(value) : undefined;
    if (canonical === undefined) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        `Invalid value '${value}' for ${parameter}: not a valid IPv${family} address`,
      );
    }
    if (!out.includes(canonical)) out.push(canonical);
  }
  return out;
}
