import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ImdsError } from "../src/eni/errors/imds-error.js";
import { ImdsHopLimitError } from "../src/eni/errors/imds-hop-limit-error.js";
import { ImdsClient } from "../src/eni/imds-client.js";
import { type SimulatorHandle, startSimulator } from "../src/sim/index.js";
import { closedPortUrl } from "./helpers/closed-port.js";
import { FakeClock } from "./helpers/fake-clock.js";
import { captureLogger, type LogLine } from "./helpers/loggers.js";
import { imdsEndpointOf, imdsFor, standardWorld } from "./helpers/sim-fixtures.js";

// i-1: eni-0a (MAC 02:00:00:00:0a:01), eni-0b (MAC 02:00:00:00:0b:01, 198.51.100.20, in subnet-a
// 198.51.100.0/25 + 2001:db8::/64) and eni-0c (MAC 02:00:00:00:0c:01, subnet-b without IPv6). See standardWorld.
const world = standardWorld({
  eni0b: { secondaryIpv4s: ["198.51.100.21", "198.51.100.22"], ipv6s: ["2001:DB8::21"] },
});

function requests(lines: LogLine[], method: string) {
  return lines.filter((l) => l.msg === "IMDS request" && l.method === method);
}

describe("ImdsClient against the simulator", () => {
  let sim: SimulatorHandle;
  let endpoint: string;
  /** One line per IMDS request the simulator answered, or left hanging. */
  const served: string[] = [];

  beforeAll(async () => {
    sim = await startSimulator(world, { log: (line) => served.push(line) });
    endpoint = imdsEndpointOf(sim, "i-1");
  });

  afterAll(async () => {
    await sim.close();
  });

  afterEach(async () => {
    await sim.setFaults({ imdsDisabled: false, imdsTokenHang: false, imdsLatencyMs: 0 });
  });

  it("reads every typed item, addresses canonical and the primary IPv4 first", async () => {
    const imds = new ImdsClient({ endpoint });
    expect(await imds.instanceId()).toBe("i-1");
    expect(await imds.region()).toBe("us-east-1");
    expect(await imds.macs()).toEqual(["02:00:00:00:0a:01", "02:00:00:00:0b:01", "02:00:00:00:0c:01"]);
    expect(await imds.interfaceId("02:00:00:00:0b:01")).toBe("eni-0b");
    expect(await imds.deviceNumber("02:00:00:00:0b:01")).toBe(1);
    expect(await imds.subnetId("02:00:00:00:0b:01")).toBe("subnet-a");
    expect(await imds.subnetIpv4Cidrs("02:00:00:00:0b:01")).toEqual(["198.51.100.0/25"]);
    expect(await imds.subnetIpv6Cidrs("02:00:00:00:0b:01")).toEqual(["2001:db8::/64"]);
    expect(await imds.localIpv4s("02:00:00:00:0b:01")).toEqual([
      "198.51.100.20",
      "198.51.100.21",
      "198.51.100.22",
    ]);
    expect(await imds.ipv6s("02:00:00:00:0b:01")).toEqual(["2001:db8::21"]);
  });

  it("accepts a MAC in upper case", async () => {
    const imds = new ImdsClient({ endpoint });
    expect(await imds.interfaceId("02:00:00:00:0B:01")).toBe("eni-0b");
  });

  it("fetches one token for many requests, concurrent ones included", async () => {
    const { logger, lines } = captureLogger();
    const imds = new ImdsClient({ endpoint, logger });
    await Promise.all([imds.instanceId(), imds.region(), imds.macs()]);
    await imds.interfaceId("02:00:00:00:0a:01");
    await imds.localIpv4s("02:00:00:00:0a:01");
    expect(requests(lines, "PUT")).toHaveLength(1);
    expect(requests(lines, "GET")).toHaveLength(5);
  });

  it("refreshes the token before it expires", async () => {
    const { logger, lines } = captureLogger();
    const clock = new FakeClock();
    const imds = new ImdsClient({ endpoint, logger, clock, tokenTtlSeconds: 600 });
    await imds.instanceId();
    await clock.sleep(539_000);
    await imds.instanceId();
    expect(requests(lines, "PUT")).toHaveLength(1);
    // Inside the last minute of the token's life: a new one is fetched before it can expire mid-request.
    await clock.sleep(2_000);
    await imds.instanceId();
    expect(requests(lines, "PUT")).toHaveLength(2);
  });

  it("fetches a new token once when IMDS answers 401 to a token it considers expired", async () => {
    // The simulator's clock runs ahead; ours stands still, so the client still believes its token is fresh.
    const simClock = new FakeClock();
    const own = await startSimulator(world, { clock: simClock });
    try {
      const { logger, lines } = captureLogger();
      const imds = imdsFor(own, "i-1", { logger, clock: new FakeClock(), tokenTtlSeconds: 60 });
      await imds.instanceId();
      await simClock.sleep(61_000);
      expect(await imds.region()).toBe("us-east-1");
      expect(requests(lines, "GET").map((l) => l.status)).toEqual([200, 401, 200]);
      expect(requests(lines, "PUT")).toHaveLength(2);
    } finally {
      await own.close();
    }
  });

  it("returns empty lists on 404: no IPv6 on the ENI, no IPv6 CIDR on the subnet", async () => {
    const imds = new ImdsClient({ endpoint });
    expect(await imds.ipv6s("02:00:00:00:0c:01")).toEqual([]);
    expect(await imds.subnetIpv6Cidrs("02:00:00:00:0c:01")).toEqual([]);
  });

  it("fails with the path on 404 for an item that must exist", async () => {
    const imds = new ImdsClient({ endpoint });
    const err = await imds.interfaceId("02:00:00:00:ff:ff").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImdsError);
    expect(err).toMatchObject({
      path: "/latest/meta-data/network/interfaces/macs/02:00:00:00:ff:ff/interface-id",
      status: 404,
    });
    expect((err as Error).message).toBe(
      `IMDS at ${endpoint} has no /latest/meta-data/network/interfaces/macs/02:00:00:00:ff:ff/interface-id ` +
        "(HTTP 404). If this is a network interface item, the ENI may have been detached or the MAC is not one " +
        "of this instance's.",
    );
  });

  it("says how to enable IMDS when it answers 403", async () => {
    await sim.setFaults({ imdsDisabled: true });
    const imds = new ImdsClient({ endpoint });
    const err = await imds.instanceId().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImdsError);
    expect((err as ImdsError).status).toBe(403);
    expect((err as Error).message).toBe(
      `IMDS at ${endpoint} answered 403 for /latest/api/token: the instance metadata service is disabled on ` +
        "this instance. Enable it with aws ec2 modify-instance-metadata-options --instance-id <id> " +
        "--http-endpoint enabled.",
    );
  });

  it("reports a token PUT that never answers as the hop limit after two tries of the timeout, never using IMDSv1", async () => {
    await sim.setFaults({ imdsTokenHang: ["i-1"] });
    const { logger, lines } = captureLogger();
    const imds = new ImdsClient({ endpoint, logger, requestTimeoutMs: 200 });
    const started = performance.now();
    served.length = 0;
    const err = await imds.instanceId().catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect(err).toBeInstanceOf(ImdsHopLimitError);
    expect((err as Error).message).toBe(
      `IMDSv2 token request to ${endpoint} got no answer within 200 ms. From a pod this usually means the ` +
        "instance metadata hop limit is 1; set HttpPutResponseHopLimit to 2 on the node's launch template " +
        "(aws ec2 modify-instance-metadata-options --instance-id <id> --http-put-response-hop-limit 2), " +
        "or run this container with hostNetwork: true.",
    );
    expect((err as ImdsHopLimitError).exitCode).toBe(3);
    // Two tries, each given the whole timeout, then the error: no third try, no GET.
    expect(served).toEqual([
      "imds i-1 PUT /latest/api/token (hanging)",
      "imds i-1 PUT /latest/api/token (hanging)",
    ]);
    expect(elapsed).toBeGreaterThanOrEqual(390);
    expect(requests(lines, "GET")).toHaveLength(0);
  });

  it("names the endpoint when nothing listens there", async () => {
    const url = await closedPortUrl();
    const imds = new ImdsClient({ endpoint: url });
    const err = await imds.instanceId().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImdsError);
    expect((err as Error).message).toBe(
      `cannot reach IMDS at ${url} (ECONNREFUSED) for PUT /latest/api/token. This must run on an EC2 instance; ` +
        "elsewhere set AWS_EC2_METADATA_SERVICE_ENDPOINT to a metadata endpoint.",
    );
  });

  it("takes its endpoint from AWS_EC2_METADATA_SERVICE_ENDPOINT, trailing slash or not", async () => {
    const saved = process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT;
    process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT = `${endpoint}/`;
    try {
      const imds = new ImdsClient();
      expect(imds.endpoint).toBe(endpoint);
      expect(await imds.instanceId()).toBe("i-1");
    } finally {
      if (saved === undefined) delete process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT;
      else process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT = saved;
    }
  });

  it("defaults to the link-local endpoint", () => {
    const saved = process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT;
    delete process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT;
    try {
      expect(new ImdsClient().endpoint).toBe("http://169.254.169.254");
    } finally {
      if (saved !== undefined) process.env.AWS_EC2_METADATA_SERVICE_ENDPOINT = saved;
    }
  });

  it("stops when its signal is aborted, with the signal's reason", async () => {
    await sim.setFaults({ imdsLatencyMs: 500 });
    const controller = new AbortController();
    const reason = new Error("shutting down");
    const imds = new ImdsClient({ endpoint, signal: controller.signal });
    const pending = imds.instanceId();
    setTimeout(() => controller.abort(reason), 50);
    await expect(pending).rejects.toBe(reason);
  });
});

/** A real HTTP server scripted per request: IMDS behaviours the simulator has no fault for (5xx, resets). */
async function scriptedImds(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createHttpServer(handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

describe("ImdsClient transient failures", () => {
  it("retries a 5xx and a reset connection, then succeeds", async () => {
    let gets = 0;
    const server = await scriptedImds((req, res) => {
      if (req.method === "PUT") {
        res.end("token-1");
        return;
      }
      gets += 1;
      if (gets === 1) {
        res.statusCode = 503;
        res.end();
      } else if (gets === 2) {
        req.socket.destroy();
      } else {
        res.end("i-1");
      }
    });
    try {
      const clock = new FakeClock();
      const imds = new ImdsClient({ endpoint: server.url, clock });
      expect(await imds.instanceId()).toBe("i-1");
      expect(gets).toBe(3);
      expect(clock.sleeps).toHaveLength(2);
    } finally {
      await server.close();
    }
  });

  it("gives up after three attempts on a persistent 5xx", async () => {
    let gets = 0;
    const server = await scriptedImds((req, res) => {
      if (req.method === "GET") gets += 1;
      res.statusCode = req.method === "PUT" ? 200 : 500;
      res.end(req.method === "PUT" ? "token-1" : "");
    });
    try {
      const imds = new ImdsClient({ endpoint: server.url, clock: new FakeClock() });
      const err = await imds.region().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ImdsError);
      expect(err).toMatchObject({ status: 500, path: "/latest/meta-data/placement/region" });
      expect((err as Error).message).toBe(
        `IMDS at ${server.url} answered HTTP 500 for /latest/meta-data/placement/region.`,
      );
      expect(gets).toBe(3);
    } finally {
      await server.close();
    }
  });

  it("fails when IMDS rejects even a fresh token", async () => {
    let puts = 0;
    const server = await scriptedImds((req, res) => {
      if (req.method === "PUT") puts += 1;
      res.statusCode = req.method === "PUT" ? 200 : 401;
      res.end(req.method === "PUT" ? `token-${puts}` : "");
    });
    try {
      const imds = new ImdsClient({ endpoint: server.url });
      const err = await imds.instanceId().catch((e: unknown) => e);
      expect((err as Error).message).toBe(
        `IMDS at ${server.url} rejected a freshly issued IMDSv2 token for /latest/meta-data/instance-id (HTTP 401).`,
      );
      expect(puts).toBe(2);
    } finally {
      await server.close();
    }
  });

  it("rejects a device number that is not a number", async () => {
    const server = await scriptedImds((req, res) => res.end(req.method === "PUT" ? "token-1" : "eth1"));
    try {
      const imds = new ImdsClient({ endpoint: server.url });
      await expect(imds.deviceNumber("02:00:00:00:0a:01")).rejects.toThrow(
        `IMDS at ${server.url} returned "eth1" for /latest/meta-data/network/interfaces/macs/02:00:00:00:0a:01/device-number, which is not a device number.`,
      );
    } finally {
      await server.close();
    }
  });
});
