import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { Ec2Handler } from "./ec2-context.js";
import { eniViewOf } from "./eni-view.js";
import { createEni } from "./model/eni-create.js";
import { prefixRequestOf } from "./prefix-params.js";
import type { QueryParams } from "./query-params.js";
import { renderNetworkInterface } from "./render-network-interface.js";
import { tagsFromSpecifications } from "./tag-specifications.js";
import { leaf, node } from "./xml.js";

/** Every parameter but those that never make two requests different: canonical JSON, sorted by name. */
function fingerprintOf(params: QueryParams): string {
  const ignored = new Set(["Action", "Version", "ClientToken", "DryRun"]);
  const entries = Object.entries(params.toRecord())
    .filter(([name]) => !ignored.has(name))
    .sort(([a], [b]) => a.localeCompare(b));
  return JSON.stringify(entries);
}

/**
 * CreateNetworkInterface: `SubnetId`, `SecurityGroupId.N`, `Description`, `TagSpecification.N` (ResourceType
 * network-interface), `ClientToken`, and prefixes (`Ipv4Prefix.N.Ipv4Prefix` or `Ipv4PrefixCount`,
 * `Ipv6Prefix.N.Ipv6Prefix` or `Ipv6PrefixCount`: structures here, unlike the assign calls' plain lists). Answers `networkInterface` as DescribeNetworkInterfaces shows it, and `clientToken`.
 * EC2's rules: model/eni-create.ts.
 */
export const createNetworkInterface: Ec2Handler = (ctx) => {
  const { params } = ctx;
  const subnetId = params.require("SubnetId");
  const ipv4Prefixes = prefixRequestOf(
    params.members("Ipv4Prefix", "Ipv4Prefix"),
    params.get("Ipv4PrefixCount"),
    () => params.int("Ipv4PrefixCount", 1, 1000),
    4,
    "Ipv4Prefix",
    "Ipv4PrefixCount",
  );
  const ipv6Prefixes = prefixRequestOf(
    params.members("Ipv6Prefix", "Ipv6Prefix"),
    params.get("Ipv6PrefixCount"),
    () => params.int("Ipv6PrefixCount", 1, 1000),
    6,
    "Ipv6Prefix",
    "Ipv6PrefixCount",
  );
  const clientToken = params.get("ClientToken");
  // "Maximum 64 ASCII characters" (Ensuring idempotency in Amazon EC2 API requests).
  if (clientToken !== undefined && (clientToken.length > 64 || !/^[\x20-\x7e]*$/.test(clientToken))) {
    throw new Ec2ApiError(
      "InvalidParameterValue",
      `Value (${clientToken}) for parameter ClientToken is invalid. It must be at most 64 ASCII characters.`,
    );
  }
  const request = {
    subnetId,
    securityGroupIds: params.list("SecurityGroupId"),
    description: params.get("Description") ?? "",
    tags: tagsFromSpecifications(params, "network-interface"),
    clientToken: clientToken === "" ? undefined : clientToken,
    fingerprint: fingerprintOf(params),
    ipv4Prefixes,
    ipv6Prefixes,
  };
  const { eni } = ctx.store.write((draft) => createEni(draft, ctx.topology, ctx.nextId, ctx.now(), request));
  return (
    node("networkInterface", renderNetworkInterface(eniViewOf(eni, ctx.topology))) +
    leaf("clientToken", request.clientToken)
  );
};
