/**
 * Attach mode's orphan sweep (src/ipam-whereabouts-bridge/attach/orphan-sweep.ts) against an in-memory EC2
 * standing in for our own port Ec2EniLifecycleApi (not the AWS SDK), on a fake clock: what it deletes, when,
 * what it never touches, dry run, the Lease, and its metrics. The decision alone: bridge-orphan-plan.test.ts.
 */
import { describe, expect, it } from "vitest";
import { ATTACH_TAGS } from "../src/eni/attach-networks.js";
import type { Ec2EniLifecycleApi, EniTagFilter } from "../src/eni/ec2-eni-lifecycle-api.js";
import { Ec2Error } from "../src/eni/errors/ec2-error.js";
import type { Ec2NetworkInterface } from "../src/eni/types.js";
import {
  OrphanSweeper,
  type OrphanSweepOptions,
} from "../src/ipam-whereabouts-bridge/attach/orphan-sweep.js";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { FakeClock } from "./helpers/fake-clock.js";
import { captureLogger } from "./helpers/loggers.js";

const CLUSTER = "prod-a";
const GRACE_MS = 600_000;
const INTERVAL_MS = 60_000;

type Port = Pick<Ec2EniLifecycleApi, "describeEnisByTags" | "deleteNetworkInterface">;

/** EC2's ENIs in memory: DescribeNetworkInterfaces' tag and status filters, and DeleteNetworkInterface's rules. */
class MemoryEc2 implements Port {
  readonly enis = new Map<string, Ec2NetworkInterface>();
  readonly calls: string[] = [];
  /** A reader that drops the filters (to show the sweep checks the answer itself). */
  ignoreFilters = false;
  /** Runs before each describe answers; the number of the describe, from 1. */
  beforeDescribe: ((count: number) => void) | undefined;
  /** The error the next deletes throw, when set. */
  deleteError: Error | undefined;
  #describes = 0;

  add(id: string, fields: Partial<Ec2NetworkInterface> = {}): void {
    this.enis.set(id, {
      eniId: id,
      mac: "02:00:00:00:00:01",
      subnetId: "subnet-0a",
      vpcId: "vpc-0a",
      instanceId: undefined,
      deviceIndex: undefined,
      primaryIpv4: "192.0.2.10",
      ipv4s: ["192.0.2.10"],
      ipv6s: [],
      tags: {
        [ATTACH_TAGS.cluster]: CLUSTER,
        [ATTACH_TAGS.noManage]: "true",
        [ATTACH_TAGS.instance]: "i-0a",
        [ATTACH_TAGS.network]: "multus-a",
      },
      status: "available",
      ...fields,
    });
  }

  attach(id: string): void {
    const eni = this.enis.get(id);
    if (eni === undefined) throw new Error(`no ${id}`);
    this.enis.set(id, {
      ...eni,
      status: "in-use",
      attachment: {
        attachmentId: `attach-${id}`,
        instanceId: "i-0b",
        deviceIndex: 1,
        networkCardIndex: 0,
        status: "attached",
        deleteOnTermination: true,
      },
    });
  }

  async describeEnisByTags(filter: EniTagFilter): Promise<Ec2NetworkInterface[]> {
    this.#describes += 1;
    this.calls.push(`DescribeNetworkInterfaces ${JSON.stringify(filter)}`);
    this.beforeDescribe?.(this.#describes);
    return [...this.enis.values()].filter(
      (eni) =>
        this.ignoreFilters ||
        (Object.entries(filter.tags).every(([key, value]) => eni.tags[key] === value) &&
          (filter.status === undefined || eni.status === filter.status)),
    );
  }

  async deleteNetworkInterface(eniId: string): Promise<void> {
    this.calls.push(`DeleteNetworkInterface ${eniId}`);
    if (this.deleteError !== undefined) throw this.deleteError;
    const eni = this.enis.get(eniId);
    if (eni?.attachment !== undefined) throw ec2Error("InvalidNetworkInterface.InUse", eniId);
    this.enis.delete(eniId);
  }
}

function ec2Error(code: string, eniId: string): Ec2Error {
  return new Ec2Error(
    {
      operation: "DeleteNetworkInterface",
      code,
      requestId: undefined,
      eniId,
      kind: code === "UnauthorizedOperation" ? "permission" : "refused",
    },
    `EC2 refused DeleteNetworkInterface of ${eniId}: ${code}`,
  );
}

function setup(options: Partial<OrphanSweepOptions> = {}) {
  const ec2 = new MemoryEc2();
  const clock = new FakeClock();
  const { logger, lines } = captureLogger();
  const metrics = new BridgeMetrics();
  const lease = { held: true };
  const sweeper = new OrphanSweeper(
    { ec2, holds: () => lease.held, logger, metrics },
    { mode: "delete", clusterName: CLUSTER, graceMs: GRACE_MS, ...options },
  );
  /** Sweeps now, then moves the clock one interval on, as the reservations loop does. */
  const sweep = async () => {
    const result = await sweeper.sweep(clock.now());
    await clock.sleep(INTERVAL_MS);
    return result;
  };
  const metric = async (name: string, label: string) => {
    const values =
      (await metrics.registry.getSingleMetric(`multus_ipmgr_bridge_${name}`)?.get())?.values ?? [];
    return Object.fromEntries(values.map((v) => [String(v.labels[label]), v.value]));
  };
  const messages = () => lines.map((l) => String(l.msg));
  return { ec2, clock, sweeper, sweep, lease, metric, messages };
}

/** Sweeps every interval until one deletes or reports something, or `max` sweeps. */
async function sweepsUntilDue(sweep: () => ReturnType<OrphanSweeper["sweep"]>, max = 20): Promise<number> {
  for (let n = 1; n <= max; n++) {
    const r = await sweep();
    if (r.deleted.length + r.reported.length + r.failed.length > 0) return n;
  }
  return -1;
}

describe("the orphan sweep", () => {
  it("deletes this cluster's available ENI once it was seen available for the grace period, not before", async () => {
    const t = setup();
    t.ec2.add("eni-orphan");
    const first = await t.sweep();
    expect(first).toEqual({ waiting: ["eni-orphan"], deleted: [], reported: [], failed: [] });
    expect(await t.metric("orphan_enis", "state")).toEqual({ waiting: 1, deletable: 0 });
    // Seen at 0, then every 60 s: due at the sweep 600 s after the first, the 11th.
    expect(await sweepsUntilDue(t.sweep)).toBe(10);
    expect(t.ec2.enis.has("eni-orphan")).toBe(false);
    expect(await t.metric("orphan_eni_deletions_total", "outcome")).toEqual({
      deleted: 1,
      dry_run: 0,
      error: 0,
    });
    expect(await t.metric("orphan_enis", "state")).toEqual({ waiting: 0, deletable: 0 });
    expect(t.messages()).toContain(
      "deleted an orphaned ENI: this cluster's, available past IPMGR_BRIDGE_ORPHAN_GRACE_MS",
    );
  });

  it("asks EC2 for this cluster's tag and status available only", async () => {
    const t = setup();
    await t.sweep();
    expect(t.ec2.calls).toEqual([
      `DescribeNetworkInterfaces {"tags":{"multus-ipmgr.io/cluster":"${CLUSTER}"},"status":"available"}`,
    ]);
  });

  it("never touches an ENI without the cluster's tag, or another cluster's, even when the reader drops the filters", async () => {
    const t = setup();
    t.ec2.ignoreFilters = true;
    t.ec2.add("eni-untagged", { tags: { [ATTACH_TAGS.noManage]: "true" } });
    t.ec2.add("eni-other", { tags: { [ATTACH_TAGS.cluster]: "prod-b" } });
    t.ec2.add("eni-in-use", { status: "in-use" });
    t.ec2.attach("eni-in-use");
    for (let n = 0; n < 30; n++)
      expect(await t.sweep()).toEqual({ waiting: [], deleted: [], reported: [], failed: [] });
    expect([...t.ec2.enis.keys()].sort()).toEqual(["eni-in-use", "eni-other", "eni-untagged"]);
    expect(t.ec2.calls.filter((c) => c.startsWith("Delete"))).toEqual([]);
  });

  it("starts the clock again for an ENI attached in between", async () => {
    const t = setup();
    t.ec2.add("eni-a");
    for (let n = 0; n < 5; n++) await t.sweep();
    t.ec2.attach("eni-a");
    await t.sweep();
    t.ec2.add("eni-a"); // detached again: available, no attachment
    expect(await sweepsUntilDue(t.sweep)).toBe(11);
  });

  it("re-reads before deleting, and keeps an ENI attached since the sweep's first read", async () => {
    const t = setup();
    t.ec2.add("eni-a");
    t.ec2.add("eni-b");
    for (let n = 0; n < 10; n++) await t.sweep();
    const describes = t.ec2.calls.filter((c) => c.startsWith("Describe")).length;
    // The re-read of the 11th sweep (its second describe) finds eni-a attached.
    t.ec2.beforeDescribe = (count) => {
      if (count === describes + 2) t.ec2.attach("eni-a");
    };
    expect(await t.sweep()).toEqual({ waiting: [], deleted: ["eni-b"], reported: [], failed: [] });
    expect(t.ec2.calls.slice(-3).map((c) => c.split(" ")[0])).toEqual([
      "DescribeNetworkInterfaces",
      "DescribeNetworkInterfaces",
      "DeleteNetworkInterface",
    ]);
    expect(t.ec2.enis.get("eni-a")?.status).toBe("in-use");
  });

  it("keeps an ENI whose delete EC2 refuses as in use, without counting an error", async () => {
    const t = setup();
    t.ec2.add("eni-a");
    for (let n = 0; n < 10; n++) await t.sweep();
    t.ec2.deleteError = ec2Error("InvalidNetworkInterface.InUse", "eni-a");
    expect(await t.sweep()).toEqual({ waiting: [], deleted: [], reported: [], failed: [] });
    expect(await t.metric("orphan_eni_deletions_total", "outcome")).toEqual({
      deleted: 0,
      dry_run: 0,
      error: 0,
    });
    expect(t.messages()).toContain(
      "an orphan candidate was attached meanwhile (EC2 refused its delete); kept",
    );
    // Its clock starts again: the next sweep sees it waiting.
    t.ec2.deleteError = undefined;
    expect((await t.sweep()).waiting).toEqual(["eni-a"]);
  });

  it("counts a failed delete as an error, warns once, and tries again at the next sweep", async () => {
    const t = setup();
    t.ec2.add("eni-a");
    for (let n = 0; n < 10; n++) await t.sweep();
    t.ec2.deleteError = ec2Error("UnauthorizedOperation", "eni-a");
    expect((await t.sweep()).failed).toEqual(["eni-a"]);
    expect((await t.sweep()).failed).toEqual(["eni-a"]);
    expect(await t.metric("orphan_eni_deletions_total", "outcome")).toEqual({
      deleted: 0,
      dry_run: 0,
      error: 2,
    });
    expect(await t.metric("orphan_enis", "state")).toEqual({ waiting: 0, deletable: 1 });
    expect(t.messages().filter((m) => m.startsWith("could not delete an orphaned ENI"))).toHaveLength(1);
    t.ec2.deleteError = undefined;
    expect((await t.sweep()).deleted).toEqual(["eni-a"]);
    expect(await t.metric("orphan_enis", "state")).toEqual({ waiting: 0, deletable: 0 });
  });

  it("in dry run deletes nothing, and logs and counts each orphan once", async () => {
    const t = setup({ mode: "dry-run" });
    t.ec2.add("eni-a");
    // Seen at the first sweep, due at the 11th.
    expect(await sweepsUntilDue(t.sweep)).toBe(11);
    for (let n = 0; n < 5; n++) expect((await t.sweep()).reported).toEqual([]);
    expect(t.ec2.enis.has("eni-a")).toBe(true);
    expect(t.ec2.calls.filter((c) => c.startsWith("Delete"))).toEqual([]);
    expect(await t.metric("orphan_eni_deletions_total", "outcome")).toEqual({
      deleted: 0,
      dry_run: 1,
      error: 0,
    });
    expect(await t.metric("orphan_enis", "state")).toEqual({ waiting: 0, deletable: 1 });
    expect(
      t
        .messages()
        .filter((m) =>
          m.startsWith("orphaned ENI: this cluster's, available past IPMGR_BRIDGE_ORPHAN_GRACE_MS"),
        ),
    ).toHaveLength(1);
  });

  it("off the Lease calls nothing, zeros its gauges, and a new hold starts its own clock", async () => {
    const t = setup();
    t.ec2.add("eni-a");
    for (let n = 0; n < 9; n++) await t.sweep();
    expect(await t.metric("orphan_enis", "state")).toEqual({ waiting: 1, deletable: 0 });
    t.lease.held = false;
    const calls = t.ec2.calls.length;
    for (let n = 0; n < 20; n++)
      expect(await t.sweep()).toEqual({ waiting: [], deleted: [], reported: [], failed: [] });
    expect(t.ec2.calls.length).toBe(calls);
    expect(await t.metric("orphan_enis", "state")).toEqual({ waiting: 0, deletable: 0 });
    t.lease.held = true;
    expect(await sweepsUntilDue(t.sweep)).toBe(11);
  });

  it("deletes no further ENI once the Lease is lost during a sweep", async () => {
    const t = setup();
    t.ec2.add("eni-a");
    t.ec2.add("eni-b");
    for (let n = 0; n < 10; n++) await t.sweep();
    const describes = t.ec2.calls.filter((c) => c.startsWith("Describe")).length;
    t.ec2.beforeDescribe = (count) => {
      if (count === describes + 2) t.lease.held = false;
    };
    expect((await t.sweep()).deleted).toEqual([]);
    expect([...t.ec2.enis.keys()]).toEqual(["eni-a", "eni-b"]);
    expect(t.messages()).toContain(
      "lost the reservations Lease during the orphan sweep: no further ENI is deleted",
    );
  });

  it("deletes nothing when the first read fails, and says why", async () => {
    const t = setup();
    t.ec2.add("eni-a");
    t.ec2.beforeDescribe = () => {
      throw ec2Error("RequestLimitExceeded", "");
    };
    await expect(t.sweeper.sweep(t.clock.now())).rejects.toThrow("RequestLimitExceeded");
    expect(t.ec2.enis.has("eni-a")).toBe(true);
  });
});
