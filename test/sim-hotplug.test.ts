import {
  AttachNetworkInterfaceCommand,
  CreateNetworkInterfaceCommand,
  DetachNetworkInterfaceCommand,
  type EC2Client,
} from "@aws-sdk/client-ec2";
import { afterEach, describe, expect, it } from "vitest";
import { kernelNameOf } from "../src/sim/hotplug.js";
import { parseWorld, type SimulatorHandle } from "../src/sim/index.js";
import { eventually } from "./helpers/kube-worlds.js";
import { ip, labUnavailableReason, NS_PREFIX } from "./helpers/netns.js";
import { startWithEc2, stopWithEc2 } from "./helpers/sim-fixtures.js";

/**
 * The simulator's hot-plug stand-in: an ENI attached to an instance whose world entry names `netns` shows as
 * a link with the ENI's MAC in that namespace, named as the kernel names ENA devices, down and without
 * addresses; a detach removes it, found by MAC. The namespace is this test's own (root only).
 */

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`simulator hot-plug tests skipped: ${unavailable}`);

interface Link {
  readonly ifname: string;
  readonly address?: string;
  readonly operstate?: string;
  readonly flags?: readonly string[];
}

let sim: SimulatorHandle | undefined;
let ec2: EC2Client;
let netns: string | undefined;
const errors: string[] = [];

afterEach(async () => {
  if (sim !== undefined) await stopWithEc2(sim, ec2);
  sim = undefined;
  if (netns !== undefined) await ip("netns", "del", netns);
  netns = undefined;
  errors.length = 0;
});

async function start(namespace: string): Promise<void> {
  const world = parseWorld({
    region: "us-east-1",
    vpc: { id: "vpc-1", cidr: "198.51.100.0/24" },
    subnets: [{ id: "subnet-a", cidr: "198.51.100.0/25", availabilityZone: "us-east-1a" }],
    instances: [
      {
        id: "i-1",
        instanceType: "m5.large",
        netns: namespace,
        enis: [
          {
            id: "eni-0a",
            mac: "02:00:00:00:0a:01",
            deviceIndex: 0,
            subnet: "subnet-a",
            primaryIpv4: "198.51.100.10",
          },
        ],
      },
    ],
  });
  ({ sim, ec2 } = await startWithEc2(world, { errorLog: (line) => errors.push(line) }));
}

async function links(namespace: string): Promise<Link[]> {
  return JSON.parse(await ip("-n", namespace, "-j", "addr", "show")) as Link[];
}

async function attachNew(deviceIndex: number): Promise<{ mac: string; attachmentId: string }> {
  const created = await ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: "subnet-a" }));
  const eni = created.NetworkInterface;
  const out = await ec2.send(
    new AttachNetworkInterfaceCommand({
      NetworkInterfaceId: eni?.NetworkInterfaceId ?? "",
      InstanceId: "i-1",
      DeviceIndex: deviceIndex,
    }),
  );
  return { mac: eni?.MacAddress ?? "", attachmentId: out.AttachmentId ?? "" };
}

describe("kernel names of hot-plugged ENA devices", () => {
  it.each([
    [0, 0, "ens5"],
    [1, 0, "ens6"],
    [3, 0, "ens8"],
    [1, 1, "ens6n1"],
  ])("device %i on card %i is %s", (device, card, name) => {
    expect(kernelNameOf(device, card)).toBe(name);
  });
});

describe.skipIf(unavailable !== undefined)("the hot-plug stand-in, in a namespace of this test", () => {
  it("makes the link with the ENI's MAC on attach (ens6 for device 1, down, no address) and removes it on detach, renamed or not", async () => {
    netns = `${NS_PREFIX}${process.pid}-hotplug`;
    await ip("netns", "add", netns);
    await start(netns);
    const { mac, attachmentId } = await attachNew(1);
    const ns = netns;
    await eventually(async () => (await links(ns)).some((l) => l.address === mac), `a link with ${mac}`);
    const link = (await links(ns)).find((l) => l.address === mac);
    expect(link?.ifname).toBe("ens6");
    expect(link?.flags).not.toContain("UP");
    expect((link as { addr_info?: unknown[] } | undefined)?.addr_info ?? []).toEqual([]);
    // An agent renames it; the detach still finds it by MAC.
    await ip("-n", ns, "link", "set", "ens6", "name", "multus1");
    await ec2.send(new DetachNetworkInterfaceCommand({ AttachmentId: attachmentId }));
    await eventually(async () => !(await links(ns)).some((l) => l.address === mac), `${mac} gone`);
    expect((await links(ns)).map((l) => l.ifname)).toEqual(["lo"]);
    expect(errors).toEqual([]);
  });

  it("answers the EC2 call when ip fails (no such namespace), and says why on the error log", async () => {
    const missing = `${NS_PREFIX}${process.pid}-absent`;
    await start(missing);
    const { attachmentId } = await attachNew(1);
    expect(attachmentId).toMatch(/^eni-attach-/);
    expect(sim?.state().enis.find((e) => e.attachmentId === attachmentId)?.instanceId).toBe("i-1");
    await eventually(() => errors.length > 0, "an error line");
    expect(errors[0]).toMatch(new RegExp(`^hotplug: attach of [0-9a-f:]+ in netns ${missing} failed: `));
  });
});
