import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { attachEni, deleteEni, detachEni, modifyEniAttribute } from "../src/sim/ec2/model/eni-attachments.js";
import { type CreateEniRequest, createEni, hideFresh } from "../src/sim/ec2/model/eni-create.js";
import { freshModel, refusal } from "./helpers/ec2-model-world.js";

// EC2's ENI lifecycle rules in the simulator's model, without HTTP. modelWorld: two c5.xlarge nodes (4 ENIs,
// one network card) in us-east-1b, i-0node1 with eni-0n1eth0 (device 0) and eni-0n1multus (device 1, holding
// 198.51.100.100 with the Elastic IP eipalloc-0web); subnet-0multus 198.51.100.64/26.
const T0 = 1_700_000_000_000;

const request = (extra: Partial<CreateEniRequest> = {}): CreateEniRequest => ({
  subnetId: "subnet-0multus",
  securityGroupIds: [],
  description: "",
  tags: {},
  clientToken: undefined,
  fingerprint: "[]",
  ipv4Prefixes: undefined,
  ipv6Prefixes: undefined,
  ...extra,
});

const at = (eniId: string, deviceIndex: number, instanceId = "i-0node1") => ({
  eniId,
  instanceId,
  deviceIndex,
  networkCardIndex: 0,
});

describe("EC2 model: the ENI lifecycle", () => {
  it("creates a detached ENI whose primary address is the subnet's lowest free one", () => {
    const { state, topology, nextId } = freshModel();
    const { eni, repeated } = createEni(state, topology, nextId, T0, request({ tags: { a: "1" } }));
    expect(repeated).toBe(false);
    expect(eni).toMatchObject({
      instanceId: null,
      deviceIndex: null,
      attachmentId: null,
      primaryIpv4: "198.51.100.68",
      ipv4s: ["198.51.100.68"],
      securityGroupIds: ["sg-0model"],
      tags: { a: "1" },
      createdAt: T0,
    });
  });

  it("answers a ClientToken's ENI again, refuses it with other parameters, and makes nothing new either way", () => {
    const { state, topology, nextId } = freshModel();
    const first = createEni(state, topology, nextId, T0, request({ clientToken: "t", fingerprint: "A" })).eni;
    const count = state.enis.length;
    const again = createEni(state, topology, nextId, T0, request({ clientToken: "t", fingerprint: "A" }));
    expect(again).toEqual({ eni: first, repeated: true });
    expect(
      refusal(() => createEni(state, topology, nextId, T0, request({ clientToken: "t", fingerprint: "B" }))),
    ).toMatchObject({ code: "IdempotentParameterMismatch" });
    expect(state.enis).toHaveLength(count);
  });

  it("attaches up to the type's limit (c5.xlarge: 4), one ENI per device index", () => {
    const { state, topology, nextId } = freshModel();
    const make = () => createEni(state, topology, nextId, T0, request()).eni.eniId;
    const a = make();
    expect(refusal(() => attachEni(state, topology, nextId, "t", at(a, 1))).code).toBe(
      "InvalidParameterValue",
    );
    attachEni(state, topology, nextId, "t", at(a, 2));
    attachEni(state, topology, nextId, "t", at(make(), 3));
    expect(refusal(() => attachEni(state, topology, nextId, "t", at(make(), 4))).code).toBe(
      "AttachmentLimitExceeded",
    );
  });

  it("refuses to detach the primary ENI and to delete an attached one; deleting ends its Elastic IP association", () => {
    const { state, topology } = freshModel();
    const primary = state.enis.find((e) => e.eniId === "eni-0n1eth0");
    expect(refusal(() => detachEni(state, primary?.attachmentId ?? "")).code).toBe("OperationNotPermitted");
    expect(refusal(() => deleteEni(state, "eni-0n1multus")).code).toBe("InvalidNetworkInterface.InUse");
    detachEni(state, "eni-attach-0n1multus");
    deleteEni(state, "eni-0n1multus");
    expect(state.addresses[0]).toMatchObject({
      allocationId: "eipalloc-0web",
      associationId: null,
      eniId: null,
    });
    expect(topology.enis.has("eni-0n1multus")).toBe(true);
  });

  it("changes only the attribute named", () => {
    const { state, topology } = freshModel();
    const before = structuredClone(state.enis.find((e) => e.eniId === "eni-0n1multus"));
    const after = modifyEniAttribute(state, topology, "eni-0n1multus", {
      kind: "sourceDestCheck",
      value: false,
    });
    expect(after).toEqual({ ...before, sourceDestCheck: false });
  });

  it("hides an ENI named by id for exactly ec2ReadLagMs after its creation", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60_000 }), fc.integer({ min: 0, max: 120_000 }), (lag, age) => {
        const { state, topology, nextId } = freshModel();
        const { eni } = createEni(state, topology, nextId, T0, request());
        const hidden = (): boolean => {
          try {
            hideFresh(state, [eni.eniId, "eni-0n1eth0"], T0 + age, lag);
            return false;
          } catch {
            return true;
          }
        };
        expect(hidden()).toBe(age < lag);
      }),
    );
  });

  it("never attaches two ENIs at one slot nor past the limit, whatever the order of attaches and detaches", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 5 })), { maxLength: 30 }),
        (steps) => {
          const { state, topology, nextId } = freshModel();
          for (const [attachOne, device] of steps) {
            try {
              if (attachOne) {
                const { eni } = createEni(state, topology, nextId, T0, request());
                attachEni(state, topology, nextId, "t", at(eni.eniId, device));
              } else {
                const victim = state.enis.find(
                  (e) => e.instanceId === "i-0node1" && e.deviceIndex === device,
                );
                if (victim?.attachmentId) detachEni(state, victim.attachmentId);
              }
            } catch (error) {
              expect((error as Error).name).toBe("Ec2ModelError");
            }
            const mine = state.enis.filter((e) => e.instanceId === "i-0node1");
            expect(mine.length).toBeLessThanOrEqual(4);
            expect(new Set(mine.map((e) => e.deviceIndex)).size).toBe(mine.length);
          }
        },
      ),
    );
  });
});
