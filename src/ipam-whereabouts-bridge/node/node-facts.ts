/**
 * What the bridge reads about its node from IMDS once, at start: the instance type, the room of an ENI and
 * the VPC. None stops the bridge when it is missing: each is logged, and the bridge does without.
 */
import type { Imds } from "../../eni/imds.js";
import type { ImdsClient } from "../../eni/imds-client.js";
import { addressesPerEniOf } from "../../eni/instance-limits.js";
import type { Logger } from "../../eni/process/logger.js";

/** The instance type (IMDS `instance-type`); undefined when IMDS has none. */
export async function instanceTypeOf(imds: Pick<ImdsClient, "get">): Promise<string | undefined> {
  return (await imds.get("/latest/meta-data/instance-type"))?.trim();
}

/** The instance type's addresses per ENI (IMDS `instance-type`, the table doctor uses); undefined if unknown. */
export async function addressesPerEni(
  imds: Pick<ImdsClient, "get">,
  logger: Logger,
): Promise<number | undefined> {
  const type = (await imds.get("/latest/meta-data/instance-type"))?.trim();
  const limit = type === undefined ? undefined : addressesPerEniOf(type);
  if (limit === undefined) {
    logger.warn(
      { instanceType: type },
      "the instance type is not in the built-in table: a wave does not check the ENIs' room, EC2 refuses what does not fit",
    );
  }
  return limit;
}

/** The node's VPC (IMDS `vpc-id` of one of its ENIs: all are in one VPC), whose subnets the reservations cover. */
export async function vpcIdOf(
  imds: Pick<Imds, "macs" | "vpcId">,
  logger: Logger,
): Promise<string | undefined> {
  try {
    const [mac] = await imds.macs();
    return mac === undefined ? undefined : await imds.vpcId(mac);
  } catch (error) {
    logger.warn(
      { err: error },
      "could not read the VPC from IMDS: reservations are kept only for the subnets of this node's Multus ENIs",
    );
    return undefined;
  }
}
