/**
 * The EC2 adapter's two Elastic IP calls against the simulator: DescribeAddresses by allocation id (one call
 * for all, a missing allocation absent) and AssociateAddress (idempotent when EC2 says "already associated"
 * and it is associated exactly where we wanted), through the one instrumentation wrapper.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Ec2Api, Ec2CallRecord } from "../src/eni/ec2-api.js";
import { Ec2Error } from "../src/eni/errors/ec2-error.js";
import { type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { captureLogger, type LogLine } from "./helpers/loggers.js";
import { ec2ApiFor, standardWorld } from "./helpers/sim-fixtures.js";

// i-1: eni-0a 198.51.100.10 (device 0), eni-0b 198.51.100.20 + .21 (device 1). See standardWorld.
const world = standardWorld({
  eni0b: { secondaryIpv4s: ["198.51.100.21"] },
  eni0c: false,
  elasticIps: [
    {
      allocationId: "eipalloc-0web",
      publicIp: "203.0.113.10",
      association: { eni: "eni-0b", privateIp: "198.51.100.21" },
    },
    { allocationId: "eipalloc-0spare", publicIp: "203.0.113.11" },
  ],
});

let sim: SimulatorHandle;
let ec2: Ec2Api;
let records: Ec2CallRecord[];
let lines: LogLine[];

beforeEach(async () => {
  sim = await startSimulator(world);
  records = [];
  const captured = captureLogger();
  lines = captured.lines;
  ec2 = ec2ApiFor(sim, { logger: captured.logger, observer: (r) => records.push(r) });
});
afterEach(() => sim.close());

const where = (allocationId: string) => {
  const eip = sim.state().addresses.find((a) => a.allocationId === allocationId);
  return { eniId: eip?.eniId, privateIp: eip?.privateIp };
};

describe("describeElasticIps", () => {
  it("reads every allocation asked for in one call; one that does not exist is simply absent", async () => {
    const eips = await ec2.describeElasticIps({
      allocationIds: ["eipalloc-0web", "eipalloc-0spare", "eipalloc-0zz"],
    });
    expect(eips).toEqual([
      {
        allocationId: "eipalloc-0web",
        publicIp: "203.0.113.10",
        association: {
          associationId: "eipassoc-00000000000000001",
          eniId: "eni-0b",
          privateIp: "198.51.100.21",
        },
      },
      { allocationId: "eipalloc-0spare", publicIp: "203.0.113.11", association: undefined },
    ]);
    expect(sim.calls().map((c) => [c.action, c.params["Filter.1.Name"]])).toEqual([
      ["DescribeAddresses", "allocation-id"],
    ]);
    expect(records).toMatchObject([{ operation: "DescribeAddresses", outcome: "ok", attempts: 1 }]);
  });

  it("makes no call for an empty list", async () => {
    expect(await ec2.describeElasticIps({ allocationIds: [] })).toEqual([]);
    expect(await ec2.describeElasticIps({ eniIds: ["eni-0b"], privateIps: [] })).toEqual([]);
    expect(sim.calls()).toEqual([]);
  });

  it("finds the Elastic IPs on given private addresses of given ENIs (filters ANDed)", async () => {
    const on = (eniIds: string[], privateIps: string[]) =>
      ec2.describeElasticIps({ eniIds, privateIps }).then((eips) => eips.map((e) => e.allocationId));
    expect(await on(["eni-0b"], ["198.51.100.21", "198.51.100.20"])).toEqual(["eipalloc-0web"]);
    expect(await on(["eni-0a"], ["198.51.100.21"])).toEqual([]);
    expect(sim.calls()[0]?.params).toMatchObject({
      "Filter.1.Name": "network-interface-id",
      "Filter.2.Name": "private-ip-address",
    });
  });

  it("names ec2:DescribeAddresses when it is denied", async () => {
    sim.setFaults({ deny: ["DescribeAddresses"] });
    const err = (await ec2
      .describeElasticIps({ allocationIds: ["eipalloc-0web"] })
      .catch((e: unknown) => e)) as Ec2Error;
    expect(err).toBeInstanceOf(Ec2Error);
    expect(err).toMatchObject({ kind: "permission", exitCode: 4, operation: "DescribeAddresses" });
    expect(err.message).toMatch(
      /^EC2 denied DescribeAddresses on Elastic IP eipalloc-0web: UnauthorizedOperation .* grant ec2:DescribeAddresses to the node role/,
    );
  });
});

describe("associateElasticIp", () => {
  it("associates, sends AllowReassociation as asked, and returns the association id", async () => {
    const id = await ec2.associateElasticIp("eipalloc-0spare", "eni-0b", "198.51.100.20", false);
    expect(id).toMatch(/^eipassoc-/);
    expect(where("eipalloc-0spare")).toEqual({ eniId: "eni-0b", privateIp: "198.51.100.20" });
    expect(sim.calls()[0]?.params).toMatchObject({
      Action: "AssociateAddress",
      AllocationId: "eipalloc-0spare",
      NetworkInterfaceId: "eni-0b",
      PrivateIpAddress: "198.51.100.20",
      AllowReassociation: "false",
    });
    expect(lines.find((l) => l.msg === "EC2 AssociateAddress")).toMatchObject({
      level: 30,
      eniId: "eni-0b",
      addresses: ["198.51.100.20"],
    });
  });

  it("treats Resource.AlreadyAssociated as done when the Elastic IP already points at this ENI and address", async () => {
    // EC2 documents the call as idempotent; should it refuse anyway (an earlier attempt applied, its answer
    // lost), a re-read that shows the wanted association settles it.
    sim.setFaults({
      failNext: [{ action: "AssociateAddress", code: "Resource.AlreadyAssociated", status: 400, count: 1 }],
    });
    const id = await ec2.associateElasticIp("eipalloc-0web", "eni-0b", "198.51.100.21", false);
    expect(id).toBe("eipassoc-00000000000000001");
    expect(sim.calls().map((c) => [c.action, c.outcome])).toEqual([
      ["AssociateAddress", "Resource.AlreadyAssociated"],
      ["DescribeAddresses", "ok"],
    ]);
  });

  it("lets Resource.AlreadyAssociated stand when the Elastic IP points elsewhere: nothing moves", async () => {
    const err = (await ec2
      .associateElasticIp("eipalloc-0web", "eni-0b", "198.51.100.20", false)
      .catch((e: unknown) => e)) as Ec2Error;
    expect(err).toBeInstanceOf(Ec2Error);
    expect(err).toMatchObject({ kind: "refused", exitCode: 5, code: "Resource.AlreadyAssociated" });
    expect(err.message).toMatch(
      /^EC2 refused AssociateAddress on eni-0b on Elastic IP eipalloc-0web for 198.51.100.20: Resource.AlreadyAssociated /,
    );
    expect(where("eipalloc-0web")).toEqual({ eniId: "eni-0b", privateIp: "198.51.100.21" });
  });

  it("moves an associated Elastic IP only with AllowReassociation", async () => {
    await ec2.associateElasticIp("eipalloc-0web", "eni-0b", "198.51.100.20", true);
    expect(where("eipalloc-0web")).toEqual({ eniId: "eni-0b", privateIp: "198.51.100.20" });
  });

  it("reports an allocation that does not exist as EC2 refusing it", async () => {
    const err = (await ec2
      .associateElasticIp("eipalloc-0zz", "eni-0b", "198.51.100.20", false)
      .catch((e: unknown) => e)) as Ec2Error;
    expect(err).toMatchObject({ kind: "refused", code: "InvalidAllocationID.NotFound" });
  });
});
