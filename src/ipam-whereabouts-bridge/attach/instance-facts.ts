/**
 * What attach mode knows of its instance, read once when the bridge first needs it: the instance id, zone
 * and VPC from IMDS, the type's ENI limits from EC2 (DescribeInstanceTypes NetworkInfo). The limits are a
 * courtesy (a network beyond them is refused without a call): when they cannot be read, EC2 refuses instead.
 */
import type { Ec2Api } from "../../eni/ec2-api.js";
import { ImdsError } from "../../eni/errors/imds-error.js";
import type { Imds } from "../../eni/imds.js";
import type { ImdsClient } from "../../eni/imds-client.js";
import type { Logger } from "../../eni/process/logger.js";
import { instanceTypeOf } from "../node/node-facts.js";
import type { AttachInstanceFacts } from "./attach-mode.js";

const ZONE_PATH = "/latest/meta-data/placement/availability-zone";

/**
 * The facts; throws ImdsError when IMDS lacks the zone or the instance has no ENI to read the VPC from (the
 * bridge's loop retries), and whatever the IMDS client throws.
 */
export async function readAttachFacts(
  imds: Pick<ImdsClient, "get"> & Pick<Imds, "instanceId" | "macs" | "vpcId">,
  ec2: Pick<Ec2Api, "describeInstanceType">,
  logger: Logger,
): Promise<AttachInstanceFacts> {
  const instanceId = await imds.instanceId();
  const availabilityZone = (await imds.get(ZONE_PATH))?.trim();
  if (availabilityZone === undefined || availabilityZone === "") {
    throw new ImdsError(
      ZONE_PATH,
      404,
      `IMDS has no ${ZONE_PATH} for instance ${instanceId}: attach mode picks each network's subnet by the node's zone; check that the bridge reaches this instance's IMDS`,
    );
  }
  const [mac] = await imds.macs();
  if (mac === undefined) {
    throw new ImdsError(
      "/latest/meta-data/network/interfaces/macs/",
      200,
      `IMDS lists no ENI for instance ${instanceId}, so its VPC is unknown: attach mode looks up subnets and security groups in the node's VPC`,
    );
  }
  const vpcId = await imds.vpcId(mac);
  const type = await instanceTypeLimits(imds, ec2, logger);
  return { instanceId, availabilityZone, vpcId, ...(type === undefined ? {} : { type }) };
}

async function instanceTypeLimits(
  imds: Pick<ImdsClient, "get">,
  ec2: Pick<Ec2Api, "describeInstanceType">,
  logger: Logger,
): Promise<AttachInstanceFacts["type"]> {
  const instanceType = await instanceTypeOf(imds);
  try {
    const type = instanceType === undefined ? undefined : await ec2.describeInstanceType(instanceType);
    if (type === undefined)
      logger.warn(
        { instanceType },
        "attach mode: the instance type's ENI limits are unknown: EC2 refuses an ENI beyond them",
      );
    return type;
  } catch (error) {
    // A shutdown's abort ends the pass; only EC2's own failure is done without.
    if (error instanceof Error && error.name === "AbortError") throw error;
    logger.warn(
      { err: error, instanceType },
      "attach mode: could not read the instance type's ENI limits (DescribeInstanceTypes): EC2 refuses an ENI beyond them",
    );
    return undefined;
  }
}
