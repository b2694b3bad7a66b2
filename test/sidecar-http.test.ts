/** The sidecar's metrics registry and HTTP endpoints, without EC2 (its signal handling: command-run.test.ts). */
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../src/eni/errors/config-error.js";
import { ExitCode } from "../src/eni/errors/exit-codes.js";
import {
  type ProbeResult,
  type RunningHttpServer,
  startHttpServer,
} from "../src/eni/process/probe-server.js";
import { SidecarMetrics } from "../src/sidecar/metrics.js";

const silent = pino({ level: "silent" });

describe("SidecarMetrics", () => {
  it("counts EC2 calls by operation and outcome and times them, from the EC2 call observer", async () => {
    const metrics = new SidecarMetrics();
    const base = {
      eniId: "eni-0000000000000a001",
      addresses: ["198.51.100.80"],
      requestId: "r",
      attempts: 1,
    };
    metrics.ec2Observer({
      ...base,
      operation: "AssignPrivateIpAddresses",
      durationMs: 20,
      outcome: "ok",
      errorCode: undefined,
    });
    metrics.ec2Observer({
      ...base,
      operation: "AssignPrivateIpAddresses",
      durationMs: 3000,
      attempts: 8,
      outcome: "error",
      errorCode: "RequestLimitExceeded",
    });
    const text = await metrics.text();
    expect(text).toContain(
      'multus_ipmgr_ec2_calls_total{operation="AssignPrivateIpAddresses",outcome="ok"} 1',
    );
    expect(text).toContain(
      'multus_ipmgr_ec2_calls_total{operation="AssignPrivateIpAddresses",outcome="error"} 1',
    );
    expect(text).toContain(
      'multus_ipmgr_ec2_call_duration_seconds_bucket{le="0.025",operation="AssignPrivateIpAddresses"} 1',
    );
    expect(text).toContain(
      'multus_ipmgr_ec2_call_duration_seconds_count{operation="AssignPrivateIpAddresses"} 2',
    );
  });

  it("exposes every sidecar metric, counters at zero before anything happened", async () => {
    const text = await new SidecarMetrics().text();
    for (const name of [
      "multus_ipmgr_reconciles_total",
      "multus_ipmgr_ec2_calls_total",
      "multus_ipmgr_ec2_call_duration_seconds",
      "multus_ipmgr_addresses_held",
      "multus_ipmgr_conflicts_total",
      "multus_ipmgr_drift_repairs_total",
      "multus_ipmgr_change_to_assigned_seconds",
    ]) {
      expect(text).toContain(`# TYPE ${name}`);
    }
    expect(text).toContain('multus_ipmgr_reconciles_total{outcome="error"} 0');
    expect(text).toContain("multus_ipmgr_conflicts_total 0");
  });

  it("records reconciles, held addresses, conflicts, repairs and change-to-assigned latency", async () => {
    const metrics = new SidecarMetrics();
    metrics.reconcile("applied");
    metrics.reconcile("noop");
    metrics.reconcile("noop");
    metrics.addressesHeld(3);
    metrics.conflict();
    metrics.driftRepair();
    metrics.driftRepair();
    metrics.changeToAssigned(40);
    const text = await metrics.text();
    expect(text).toContain('multus_ipmgr_reconciles_total{outcome="noop"} 2');
    expect(text).toContain("multus_ipmgr_addresses_held 3");
    expect(text).toContain("multus_ipmgr_conflicts_total 1");
    expect(text).toContain("multus_ipmgr_drift_repairs_total 2");
    expect(text).toContain('multus_ipmgr_change_to_assigned_seconds_bucket{le="0.05"} 1');
    expect(text).toContain('multus_ipmgr_change_to_assigned_seconds_bucket{le="0.025"} 0');
  });

  it("reads resident memory, the heap and CPU time when scraped, and never lets the CPU counter go down", async () => {
    let rss = 50 * 1024 * 1024;
    let cpu = 1.5;
    const heap = { totalBytes: 20_000_000, usedBytes: 12_000_000, externalBytes: 3_000_000 };
    const metrics = new SidecarMetrics({
      residentMemoryBytes: () => rss,
      cpuSeconds: () => cpu,
      heap: () => heap,
    });
    let text = await metrics.text();
    expect(text).toContain(`process_resident_memory_bytes ${50 * 1024 * 1024}`);
    expect(text).toContain("nodejs_heap_size_total_bytes 20000000");
    expect(text).toContain("nodejs_heap_size_used_bytes 12000000");
    expect(text).toContain("nodejs_external_memory_bytes 3000000");
    expect(text).toContain("process_cpu_seconds_total 1.5");
    rss = 52 * 1024 * 1024;
    cpu = 2.25;
    text = await metrics.text();
    expect(text).toContain(`process_resident_memory_bytes ${52 * 1024 * 1024}`);
    expect(text).toContain("process_cpu_seconds_total 2.25");
    cpu = 2;
    expect(await metrics.text()).toContain("process_cpu_seconds_total 2.25");
  });

  it("reports this process's own figures by default", async () => {
    const text = await new SidecarMetrics().text();
    const rss = Number(/^process_resident_memory_bytes (\d+)$/m.exec(text)?.[1]);
    expect(rss).toBeGreaterThan(1024 * 1024);
    expect(Number(/^process_cpu_seconds_total ([\d.e+-]+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
  });

  it("keeps two instances apart (no global registry)", async () => {
    const a = new SidecarMetrics();
    const b = new SidecarMetrics();
    a.conflict();
    expect(await b.text()).toContain("multus_ipmgr_conflicts_total 0");
  });
});

describe("the HTTP server", () => {
  let server: RunningHttpServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function serve(health: ProbeResult, readiness: ProbeResult): Promise<string> {
    const metrics = new SidecarMetrics();
    metrics.addressesHeld(2);
    server = await startHttpServer({
      host: "127.0.0.1",
      port: 0,
      status: { health: () => health, readiness: () => readiness },
      metrics,
      logger: silent,
    });
    return `http://127.0.0.1:${server.port}`;
  }

  it("answers /healthz and /readyz with 200 and what is fine", async () => {
    const base = await serve(
      { ok: true, lines: [] },
      { ok: true, lines: ["198.51.100.80 on net1 held by eni-0000000000000a001"] },
    );
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe("ok\n");
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toBe("ready\n- 198.51.100.80 on net1 held by eni-0000000000000a001\n");
  });

  it("answers 503 with what is missing", async () => {
    const base = await serve(
      { ok: false, lines: ["the reconcile loop has not run in the last 15000 ms"] },
      { ok: false, lines: ["198.51.100.80 on net1: not held by eni-0000000000000a001 yet"] },
    );
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(503);
    expect(await health.text()).toBe("unhealthy\n- the reconcile loop has not run in the last 15000 ms\n");
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.text()).toBe(
      "not ready\n- 198.51.100.80 on net1: not held by eni-0000000000000a001 yet\n",
    );
  });

  it("serves /metrics in the Prometheus text format", async () => {
    const base = await serve({ ok: true, lines: [] }, { ok: true, lines: [] });
    const response = await fetch(`${base}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await response.text()).toContain("multus_ipmgr_addresses_held 2");
  });

  it("answers 404 for other paths and 405 for other methods", async () => {
    const base = await serve({ ok: true, lines: [] }, { ok: true, lines: [] });
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    const post = await fetch(`${base}/readyz`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  function startOn(host: string, port: number): Promise<RunningHttpServer> {
    return startHttpServer({
      host,
      port,
      status: { health: () => ({ ok: true, lines: [] }), readiness: () => ({ ok: true, lines: [] }) },
      metrics: new SidecarMetrics(),
      logger: silent,
    });
  }

  async function failureOf(promise: Promise<RunningHttpServer>): Promise<ConfigError> {
    const error = await promise.then(
      async (started) => {
        await started.close();
        throw new Error("expected the server not to start");
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }

  it("fails to start on a port already taken, as a configuration error naming IPMGR_HTTP_PORT and the fix", async () => {
    await serve({ ok: true, lines: [] }, { ok: true, lines: [] });
    const taken = server?.port ?? 0;
    const error = await failureOf(startOn("127.0.0.1", taken));
    expect(error.exitCode).toBe(ExitCode.config);
    expect(error.message).toBe(
      `IPMGR_HTTP_PORT="${taken}": port ${taken} on 127.0.0.1 is already in use (EADDRINUSE); set IPMGR_HTTP_PORT to a free port, and the probes' port with it`,
    );
  });

  it("fails to start on an address no interface has, as a configuration error naming IPMGR_HTTP_HOST", async () => {
    // A documentation address: binding to it fails before anything is sent.
    const error = await failureOf(startOn("192.0.2.99", 0));
    expect(error.message).toBe(
      `IPMGR_HTTP_HOST="192.0.2.99": no interface of this pod has this address (EADDRNOTAVAIL); use 0.0.0.0 (every IPv4 address), :: (every address) or one of the pod's addresses`,
    );
  });
});
