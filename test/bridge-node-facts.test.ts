/**
 * What the bridge reads about its node from IMDS at start, with an IMDS standing in for the real one: the
 * room of an ENI (from the instance type) and the VPC. A fact IMDS cannot give is logged and done without.
 */
import { describe, expect, it } from "vitest";
import { addressesPerEniOf } from "../src/eni/instance-limits.js";
import { addressesPerEni, vpcIdOf } from "../src/ipam-whereabouts-bridge/node/node-facts.js";
import { captureLogger } from "./helpers/loggers.js";

const NOT_IN_TABLE =
  "the instance type is not in the built-in table: a wave does not check the ENIs' room, EC2 refuses what does not fit";
const NO_VPC =
  "could not read the VPC from IMDS: reservations are kept only for the subnets of this node's Multus ENIs";

describe("addressesPerEni", () => {
  it("reads the instance type and gives the table's addresses per ENI, saying nothing", async () => {
    const { logger, lines } = captureLogger();
    const paths: string[] = [];
    const imds = {
      get: async (path: string) => {
        paths.push(path);
        return "m5.large\n";
      },
    };
    expect(await addressesPerEni(imds, logger)).toBe(addressesPerEniOf("m5.large"));
    expect(addressesPerEniOf("m5.large")).toBeGreaterThan(0);
    expect(paths).toEqual(["/latest/meta-data/instance-type"]);
    expect(lines).toEqual([]);
  });

  it.each([
    ["a type the table does not know", "x99.metal"],
    ["IMDS answering 404", undefined],
  ])("gives undefined and warns for %s", async (_, answer) => {
    const { logger, lines } = captureLogger();
    expect(await addressesPerEni({ get: async () => answer }, logger)).toBeUndefined();
    expect(lines).toEqual([expect.objectContaining({ msg: NOT_IN_TABLE })]);
    expect(lines[0]?.instanceType).toBe(answer);
  });
});

describe("vpcIdOf", () => {
  it("gives the VPC of the first ENI", async () => {
    const { logger, lines } = captureLogger();
    const imds = {
      macs: async () => ["0e:00:00:00:00:01", "0e:00:00:00:00:02"],
      vpcId: async (mac: string) => (mac === "0e:00:00:00:00:01" ? "vpc-0a" : "vpc-other"),
    };
    expect(await vpcIdOf(imds, logger)).toBe("vpc-0a");
    expect(lines).toEqual([]);
  });

  it("gives undefined, saying nothing, when the instance lists no ENI", async () => {
    const { logger, lines } = captureLogger();
    const imds = { macs: async () => [], vpcId: async () => "vpc-0a" };
    expect(await vpcIdOf(imds, logger)).toBeUndefined();
    expect(lines).toEqual([]);
  });

  it("gives undefined and warns when IMDS fails", async () => {
    const { logger, lines } = captureLogger();
    const imds = {
      macs: async () => ["0e:00:00:00:00:01"],
      vpcId: async (): Promise<string> => {
        throw new Error("IMDS at http://127.0.0.1:1 has no vpc-id (HTTP 404)");
      },
    };
    expect(await vpcIdOf(imds, logger)).toBeUndefined();
    expect(lines).toEqual([expect.objectContaining({ msg: NO_VPC })]);
  });
});
