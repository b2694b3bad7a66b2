import { describe, expect, it } from "vitest";
import { addressesNamed } from "../src/sim/ec2/model/elastic-ips.js";
import { enisNamed } from "../src/sim/ec2/model/enis.js";
import { checkInstanceId, enisOfInstance, instancesNamed } from "../src/sim/ec2/model/instances.js";
import { EGRESS_ALL, egressRules, securityGroupsNamed } from "../src/sim/ec2/model/security-groups.js";
import { subnetsNamed } from "../src/sim/ec2/model/subnets.js";
import { freshModel, refusal } from "./helpers/ec2-model-world.js";

// Which resources a Describe call names, in the simulator's model, without HTTP: a named resource that does
// not exist fails the whole call, as in EC2; no names means all.
describe("EC2 model: what Describe calls name", () => {
  it("names ENIs by id, all of them when no id is given, and refuses an unknown id", () => {
    const { state } = freshModel();
    expect(enisNamed(state, [])).toHaveLength(4);
    expect(enisNamed(state, ["eni-0n2multus", "eni-0n1eth0"]).map((e) => e.eniId)).toEqual([
      "eni-0n1eth0",
      "eni-0n2multus",
    ]);
    expect(refusal(() => enisNamed(state, ["eni-0n1eth0", "eni-0gone"]))).toEqual({
      name: "Ec2ModelError",
      code: "InvalidNetworkInterfaceID.NotFound",
      message: "The networkInterface ID 'eni-0gone' does not exist",
    });
  });

  it("names Elastic IPs by allocation id and public IP, and refuses unknown ones of either kind", () => {
    const { state } = freshModel();
    expect(addressesNamed(state, [], [])).toHaveLength(1);
    expect(addressesNamed(state, ["eipalloc-0web"], ["203.0.113.10"])).toHaveLength(1);
    expect(refusal(() => addressesNamed(state, ["eipalloc-0gone"], []))).toEqual({
      name: "Ec2ModelError",
      code: "InvalidAllocationID.NotFound",
      message: "The allocation ID 'eipalloc-0gone' does not exist",
    });
    expect(refusal(() => addressesNamed(state, [], ["203.0.113.99"]))).toEqual({
      name: "Ec2ModelError",
      code: "InvalidAddress.NotFound",
      message: "Address '203.0.113.99' not found.",
    });
  });

  it("names security groups by id and name; the VPC's default group is there, with AWS's default egress", () => {
    const { topology } = freshModel();
    const [group, ...others] = securityGroupsNamed(topology, [], ["default"]);
    expect(others).toEqual([]);
    expect(group?.name).toBe("default");
    expect(securityGroupsNamed(topology, [group?.id ?? ""], [])).toEqual([group]);
    if (group !== undefined) expect(egressRules(group)).toEqual([EGRESS_ALL]);
    expect(EGRESS_ALL).toEqual({ protocol: "-1", cidrs: ["0.0.0.0/0"], ipv6Cidrs: [], groups: [] });
    expect(refusal(() => securityGroupsNamed(topology, ["sg-0gone"], []))).toEqual({
      name: "Ec2ModelError",
      code: "InvalidGroup.NotFound",
      message: "The security group 'sg-0gone' does not exist",
    });
    expect(refusal(() => securityGroupsNamed(topology, [], ["web"])).message).toBe(
      "The security group 'web' does not exist in default VPC 'vpc-0model'",
    );
  });

  it("names instances by id and lists an instance's ENIs by device index; refuses malformed and unknown ids", () => {
    const { state, topology } = freshModel();
    expect(instancesNamed(topology, []).map((i) => i.id)).toEqual(["i-0node1", "i-0node2"]);
    expect(instancesNamed(topology, ["i-0node2"]).map((i) => i.id)).toEqual(["i-0node2"]);
    expect(enisOfInstance(state, "i-0node1").map((e) => e.deviceIndex)).toEqual([0, 1]);
    expect(refusal(() => checkInstanceId("node1"))).toEqual({
      name: "Ec2ModelError",
      code: "InvalidInstanceID.Malformed",
      message: 'Invalid id: "node1" (expecting "i-...")',
    });
    expect(refusal(() => instancesNamed(topology, ["i-0gone"])).message).toBe(
      "The instance ID 'i-0gone' does not exist",
    );
  });

  it("names subnets by id, in the world's order, and refuses an unknown id", () => {
    const { topology } = freshModel();
    expect(subnetsNamed(topology, ["subnet-0multus", "subnet-0nodes"]).map((s) => s.id)).toEqual([
      "subnet-0nodes",
      "subnet-0multus",
    ]);
    expect(refusal(() => subnetsNamed(topology, ["subnet-0gone"]))).toEqual({
      name: "Ec2ModelError",
      code: "InvalidSubnetID.NotFound",
      message: "The subnet ID 'subnet-0gone' does not exist",
    });
  });
});
