import { describe, expect, it } from "vitest";
import { AddressNotAllowedError } from "../src/eni/errors/address-not-allowed-error.js";
import { Ec2Error } from "../src/eni/errors/ec2-error.js";
import type { EniState, Placement, Plan, PlanAction, Refusal } from "../src/eni/types.js";
import { Ec2Answers, ENI_FULL_CODE } from "../src/sidecar/ec2-answers.js";

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

const NO_VIEW = { placements: [], enis: [] };

describe("Ec2Answers: refusals only EC2 can make", () => {
  const notAllowed = new AddressNotAllowedError([refusal]);
  const other = new Ec2Error(
    { operation: "AssignIpv6Addresses", code: "X", requestId: undefined, eniId: "eni-1", kind: "refused" },
    "refused",
  );

  it("keeps an address that is another instance's primary from EC2 until it is to be asked again, and shows it all along", () => {
    const answers = new Ec2Answers();
    answers.refusedBy(
      [
        { action: assign6, error: other },
        { action: assign4, error: notAllowed },
      ],
      NO_VIEW,
      1_000,
    );
    expect(answers.refusals(999)).toEqual([refusal]);
    expect(answers.refusals(1_000)).toEqual([]);
    expect(answers.refusals()).toEqual([refusal]);
  });

  it("forgets it when the address leaves its interface, or when EC2 takes it after all", () => {
    const answers = new Ec2Answers();
    answers.refusedBy([{ action: assign4, error: notAllowed }], NO_VIEW, 1_000);
    answers.observed([eni([])], net1("198.51.100.21"));
    expect(answers.refusals()).toEqual([refusal]);
    answers.observed([eni([])], [{ name: "net2", mac: MAC, addresses: ["198.51.100.21"] }]);
    expect(answers.refusals()).toEqual([]);
    answers.refusedBy([{ action: assign4, error: notAllowed }], NO_VIEW, 1_000);
    answers.held(["198.51.100.21"]);
    expect(answers.refusals()).toEqual([]);
  });
});

describe("Ec2Answers: a full ENI", () => {
  const full = (operation: string, code: string) =>
    new Ec2Error({ operation, code, requestId: undefined, eniId: "eni-1", kind: "refused" }, "refused");
  const placed = (address: string, interfaceName = "net1"): Placement => ({
    address,
    family: address.includes(":") ? 6 : 4,
    interfaceName,
    eniId: "eni-1",
    mac: MAC,
  });
  const both: PlanAction = { ...assign4, addresses: ["198.51.100.80", "198.51.100.81"] };
  const fullEni = eni(["198.51.100.11", "198.51.100.12"]);
  const view = {
    placements: [placed("198.51.100.80"), placed("198.51.100.81"), placed("2001:db8::80")],
    enis: [fullEni],
  };

  it("keeps every address of the refused IPv4 assign, naming the ENI, its count and the fix", () => {
    const answers = new Ec2Answers();
    answers.refusedBy(
      [{ action: both, error: full("AssignPrivateIpAddresses", ENI_FULL_CODE) }],
      view,
      1_000,
    );
    const refusals = answers.refusals(999);
    expect(refusals.map((r) => [r.address, r.interfaceName, r.reason])).toEqual([
      ["198.51.100.80", "net1", "eni-full"],
      ["198.51.100.81", "net1", "eni-full"],
    ]);
    expect(refusals[0]?.detail).toMatch(
      /ENI eni-1 holds as many private IPv4 addresses as its instance type allows \(it holds 3, the primary included\)/,
    );
    expect(refusals[0]?.detail).toMatch(/PrivateIpAddressLimitExceeded.*larger instance type/);
    expect(answers.refusals(1_000)).toEqual([]);
  });

  it("learns nothing from other refusals of an assign, nor from that code on another action", () => {
    const answers = new Ec2Answers();
    answers.refusedBy(
      [
        { action: assign4, error: full("AssignPrivateIpAddresses", "InvalidParameterValue") },
        { action: assign6, error: full("AssignIpv6Addresses", ENI_FULL_CODE) },
        { action: assign4, error: new Error(ENI_FULL_CODE) },
      ],
      view,
      1_000,
    );
    expect(answers.refusals()).toEqual([]);
  });

  /** Answers that learned EC2's full-ENI refusal of both addresses of `both`. */
  const learnFullEni = (): Ec2Answers => {
    const answers = new Ec2Answers();
    answers.refusedBy(
      [{ action: both, error: full("AssignPrivateIpAddresses", ENI_FULL_CODE) }],
      view,
      1_000,
    );
    return answers;
  };

  it("forgets it once the ENI holds fewer addresses, holds the address, or is gone; not while it stays full", () => {
    const pod = net1("198.51.100.80", "198.51.100.81");
    const stays = learnFullEni();
    stays.observed([fullEni], pod);
    stays.observed([eni(["198.51.100.12", "198.51.100.13"])], pod);
    expect(stays.refusals()).toHaveLength(2);

    const roomMade = learnFullEni();
    roomMade.observed([eni(["198.51.100.11"])], pod);
    expect(roomMade.refusals()).toEqual([]);

    const takenMeanwhile = learnFullEni();
    takenMeanwhile.observed([eni(["198.51.100.11", "198.51.100.80"])], pod);
    expect(takenMeanwhile.refusals().map((r) => r.address)).toEqual(["198.51.100.81"]);

    const gone = learnFullEni();
    gone.observed([], pod);
    expect(gone.refusals()).toEqual([]);
  });

  it("forgets it at once when our own IPv4 release on that ENI is accepted, and says so; not otherwise", () => {
    const released = learnFullEni();
    expect(released.applied(planOf(release4))).toBe(true);
    expect(released.refusals()).toEqual([]);

    const refusedRelease = learnFullEni();
    expect(refusedRelease.applied(planOf(release4), new Set([release4]))).toBe(false);
    expect(refusedRelease.refusals()).toHaveLength(2);

    const elsewhere = learnFullEni();
    expect(elsewhere.applied(planOf({ ...release4, eniId: "eni-2" }))).toBe(false);
    expect(elsewhere.applied(planOf(assign6, { ...release4, addresses: [] }))).toBe(false);
    expect(elsewhere.refusals()).toHaveLength(2);
  });
});
