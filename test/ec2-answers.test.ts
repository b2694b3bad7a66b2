import { describe, expect, it } from "vitest";
import { AddressNotAllowedError } from "../src/eni/errors/address-not-allowed-error.js";
import { Ec2Error } from "../src/eni/errors/ec2-error.js";
import type { EniState, Plan, PlanAction, Refusal } from "../src/eni/types.js";
import { Ec2Answers } from "../src/sidecar/ec2-answers.js";

const MAC = "02:00:00:00:01:01";
const eni = (ipv4s: string[], ipv6s: string[] = []): EniState => ({
  eniId: "eni-1",
  mac: MAC,
  deviceIndex: 1,
  subnetId: "subnet-1",
  subnetIpv4Cidrs: ["198.51.100.0/24"],
  subnetIpv6Cidrs: ["2001:db8::/64"],
  primaryIpv4: "198.51.100.10",
  ipv4s: ["198.51.100.10", ...ipv4s],
  ipv6s,
});
const planOf = (...actions: PlanAction[]): Plan => ({
  actions,
  placements: [],
  satisfied: [],
  refusals: [],
  skipped: [],
});
const assign4: PlanAction = {
  kind: "assign-ipv4",
  eniId: "eni-1",
  addresses: ["198.51.100.80"],
  allowReassignment: true,
};
const assign6: PlanAction = { kind: "assign-ipv6", eniId: "eni-1", addresses: ["2001:db8::80"] };
const release4: PlanAction = { kind: "unassign-ipv4", eniId: "eni-1", addresses: ["198.51.100.80"] };
const move6: PlanAction = {
  kind: "unassign-ipv6",
  eniId: "eni-9",
  addresses: ["2001:db8::80"],
  reason: "move",
};
const net1 = (...addresses: string[]) => [{ name: "net1", mac: MAC, addresses }];

const refusal: Refusal = {
  address: "198.51.100.21",
  interfaceName: "net1",
  mac: MAC,
  reason: "eni-primary-address",
  detail: "address 198.51.100.21 on net1 is the primary private IPv4 address of ENI eni-2 of instance i-2",
};

describe("Ec2Answers: assignments IMDS has not shown yet", () => {
  it("keeps what EC2 accepted until IMDS shows it on that ENI, or it is confirmed", () => {
    const answers = new Ec2Answers();
    answers.applied(planOf(assign4, move6, assign6));
    expect([...answers.assignedUnconfirmed]).toEqual([
      ["198.51.100.80", "eni-1"],
      ["2001:db8::80", "eni-1"],
    ]);
    answers.observed([eni([], ["2001:db8:0:0::80"])], net1());
    expect([...answers.assignedUnconfirmed.keys()]).toEqual(["198.51.100.80"]);
    answers.confirmed(["198.51.100.80"]);
    expect(answers.assignedUnconfirmed.size).toBe(0);
  });

  it("forgets an assignment released since, and never notes a failed action", () => {
    const answers = new Ec2Answers();
    answers.applied(planOf(assign4));
    answers.applied(planOf(release4));
    expect(answers.assignedUnconfirmed.size).toBe(0);
    answers.applied(planOf(assign4, assign6), new Set([assign4]));
    expect([...answers.assignedUnconfirmed.keys()]).toEqual(["2001:db8::80"]);
  });
});

describe("Ec2Answers: refusals only EC2 can make", () => {
  const notAllowed = new AddressNotAllowedError([refusal]);
  const other = new Ec2Error(
    { operation: "AssignIpv6Addresses", code: "X", requestId: undefined, eniId: "eni-1", kind: "refused" },
    "refused",
  );

  it("keeps an address that is another instance's primary from EC2 until it is to be asked again, and shows it all along", () => {
    const answers = new Ec2Answers();
    answers.refusedBy([other, notAllowed], 1_000);
    expect(answers.refusals(999)).toEqual([refusal]);
    expect(answers.refusals(1_000)).toEqual([]);
    expect(answers.refusals()).toEqual([refusal]);
  });

  it("forgets it when the address leaves its interface, or when EC2 takes it after all", () => {
    const answers = new Ec2Answers();
    answers.refusedBy([notAllowed], 1_000);
    answers.observed([eni([])], net1("198.51.100.21"));
    expect(answers.refusals()).toEqual([refusal]);
    answers.observed([eni([])], [{ name: "net2", mac: MAC, addresses: ["198.51.100.21"] }]);
    expect(answers.refusals()).toEqual([]);
    answers.refusedBy([notAllowed], 1_000);
    answers.held(["198.51.100.21"]);
    expect(answers.refusals()).toEqual([]);
  });
});
