import { describe, expect, it } from "vitest";
import { allocateAddress, associateAddress, disassociateAddress } from "../src/sim/ec2/model/elastic-ips.js";
import { assignPrivateIps, unassignPrivateIps } from "../src/sim/ec2/model/eni-addresses.js";
import { mustParseCidr } from "../src/sim/ip-math.js";
import { freshModel, refusal } from "./helpers/ec2-model-world.js";

// EC2's Elastic IP rules in the simulator's model, without HTTP. The world's eipalloc-0web (203.0.113.10) is
// associated with 198.51.100.100 on eni-0n1multus; ids are numbered after the world's two (scr-1, eipassoc-2).
const refused = (code: string, message: string) => ({ name: "Ec2ModelError", code, message });

describe("EC2 model: Elastic IPs", () => {
  it("allocates the lowest free address of the public pool, unassociated, with its tags", () => {
    const { state, topology, nextId } = freshModel();
    const eip = allocateAddress(state, topology, nextId, { team: "net" });
    expect(eip).toEqual({
      allocationId: "eipalloc-00000000000000003",
      publicIp: "203.0.113.1",
      domain: "vpc",
      associationId: null,
      eniId: null,
      privateIp: null,
      tags: { team: "net" },
    });
    expect(state.addresses.map((a) => a.publicIp)).toEqual(["203.0.113.10", "203.0.113.1"]);
  });

  it("refuses an allocation when the pool is used up (AddressLimitExceeded)", () => {
    const { state, topology, nextId } = freshModel();
    for (let n = 0; n < 253; n++) allocateAddress(state, topology, nextId, {});
    expect(refusal(() => allocateAddress(state, topology, nextId, {}))).toEqual(
      refused("AddressLimitExceeded", "The maximum number of addresses has been reached."),
    );
  });

  it("associates with an ENI's primary address by default, and with an instance's only ENI", () => {
    const { state, topology, nextId } = freshModel();
    const { allocationId } = allocateAddress(state, topology, nextId, {});
    const request = { allocationId, allowReassociation: true };
    associateAddress(state, topology, nextId, { ...request, target: { eniId: "eni-0n2multus" } });
    expect(state.addresses[1]).toMatchObject({ eniId: "eni-0n2multus", privateIp: "198.51.100.71" });
    expect(
      refusal(() =>
        associateAddress(state, topology, nextId, { ...request, target: { instanceId: "i-0node1" } }),
      ),
    ).toEqual(
      refused(
        "InvalidInstanceID",
        "There are multiple interfaces attached to instance 'i-0node1'. Please specify an interface ID for the operation instead.",
      ),
    );
  });

  it("is idempotent where it already points, and gives a move a new association id", () => {
    const { state, topology, nextId } = freshModel();
    const first = state.addresses[0]?.associationId;
    const request = { allocationId: "eipalloc-0web", allowReassociation: true };
    const same = associateAddress(state, topology, nextId, {
      ...request,
      target: { eniId: "eni-0n1multus" },
      privateIp: "198.51.100.100",
    });
    expect(same).toBe(first);
    const moved = associateAddress(state, topology, nextId, {
      ...request,
      target: { eniId: "eni-0n2multus" },
    });
    expect(moved).not.toBe(first);
    expect(state.addresses[0]).toMatchObject({ associationId: moved, eniId: "eni-0n2multus" });
  });

  it("refuses to move an associated Elastic IP when AllowReassociation is false, and changes nothing", () => {
    const { state, topology, nextId } = freshModel();
    const before = structuredClone(state);
    expect(
      refusal(() =>
        associateAddress(state, topology, nextId, {
          allocationId: "eipalloc-0web",
          target: { eniId: "eni-0n2multus" },
          allowReassociation: false,
        }),
      ),
    ).toEqual(
      refused(
        "Resource.AlreadyAssociated",
        "resource eipalloc-0web is already associated with associate-id eipassoc-00000000000000002",
      ),
    );
    expect(state).toEqual(before);
  });

  it("takes a private address over from another Elastic IP, which stays allocated", () => {
    const { state, topology, nextId } = freshModel();
    const { allocationId } = allocateAddress(state, topology, nextId, {});
    associateAddress(state, topology, nextId, {
      allocationId,
      target: { eniId: "eni-0n1multus" },
      privateIp: "198.51.100.100",
      allowReassociation: true,
    });
    expect(state.addresses[0]).toMatchObject({
      allocationId: "eipalloc-0web",
      associationId: null,
      eniId: null,
    });
    expect(state.addresses[1]).toMatchObject({ allocationId, privateIp: "198.51.100.100" });
  });

  it("refuses a private address the ENI does not hold, and unknown or malformed allocations", () => {
    const { state, topology, nextId } = freshModel();
    const target = { eniId: "eni-0n2multus" };
    const associate = (allocationId: string, privateIp?: string) =>
      refusal(() =>
        associateAddress(state, topology, nextId, {
          allocationId,
          target,
          privateIp,
          allowReassociation: true,
        }),
      );
    expect(associate("eipalloc-0web", "198.51.100.100")).toEqual(
      refused(
        "InvalidParameterValue",
        "The private IP address 198.51.100.100 is not assigned to the network interface eni-0n2multus.",
      ),
    );
    expect(associate("eipalloc-0gone")).toEqual(
      refused("InvalidAllocationID.NotFound", "The allocation ID 'eipalloc-0gone' does not exist"),
    );
    expect(associate("alloc-1").code).toBe("InvalidAllocationID.Malformed");
  });

  it("associates with an address inside the ENI's prefix, never another ENI's; unassigning the prefix ends it", () => {
    const { state, topology, nextId } = freshModel();
    assignPrivateIps(state, topology, "eni-0n2multus", {
      prefixes: { named: [mustParseCidr("198.51.100.80/28")] },
    });
    const request = { allocationId: "eipalloc-0web", privateIp: "198.51.100.85", allowReassociation: true };
    const associationId = associateAddress(state, topology, nextId, {
      ...request,
      target: { eniId: "eni-0n2multus" },
    });
    expect(state.addresses[0]).toMatchObject({
      associationId,
      eniId: "eni-0n2multus",
      privateIp: "198.51.100.85",
    });
    expect(
      refusal(() =>
        associateAddress(state, topology, nextId, { ...request, target: { eniId: "eni-0n1multus" } }),
      ),
    ).toEqual(
      refused(
        "InvalidParameterValue",
        "The private IP address 198.51.100.85 is not assigned to the network interface eni-0n1multus.",
      ),
    );
    unassignPrivateIps(state, "eni-0n2multus", [], ["198.51.100.80/28"]);
    expect(state.addresses[0]).toMatchObject({
      allocationId: "eipalloc-0web",
      associationId: null,
      eniId: null,
      privateIp: null,
    });
  });

  it("follows its private address when it moves with AllowReassignment", () => {
    const { state, topology } = freshModel();
    assignPrivateIps(state, topology, "eni-0n2multus", { addresses: ["198.51.100.100"] }, true);
    expect(state.addresses[0]).toMatchObject({ eniId: "eni-0n2multus", privateIp: "198.51.100.100" });
  });

  it("disassociates, keeping the allocation; an unknown association id is refused", () => {
    const { state } = freshModel();
    disassociateAddress(state, "eipassoc-00000000000000002");
    expect(state.addresses[0]).toMatchObject({
      allocationId: "eipalloc-0web",
      associationId: null,
      privateIp: null,
    });
    expect(refusal(() => disassociateAddress(state, "eipassoc-00000000000000002"))).toEqual(
      refused(
        "InvalidAssociationID.NotFound",
        "The association ID 'eipassoc-00000000000000002' does not exist",
      ),
    );
  });
});
