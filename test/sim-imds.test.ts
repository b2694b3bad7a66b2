import { AssignIpv6AddressesCommand, AssignPrivateIpAddressesCommand } from "@aws-sdk/client-ec2";
import { afterEach, describe, expect, it } from "vitest";
import type { Clock } from "../src/eni/process/clock.js";
import { loadWorldFile, type SimulatorHandle, startSimulator, type World } from "../src/sim/index.js";
import { eventually } from "./helpers/kube-worlds.js";
import { ec2ClientFor } from "./helpers/sim-fixtures.js";

let sim: SimulatorHandle;
let imds: string;
const multusMac = "02:00:00:00:0b:01";
const macPath = `/latest/meta-data/network/interfaces/macs/${multusMac}`;

async function start(
  options: { clock?: Clock; world?: (w: World) => World; log?: (line: string) => void } = {},
): Promise<void> {
  const world = await loadWorldFile("examples/world-demo.yaml");
  sim = await startSimulator(options.world === undefined ? world : options.world(world), {
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  imds = sim.imdsEndpoints["i-0demo1"] as string;
}

afterEach(async () => {
  await sim.close();
});

const putToken = (headers: Record<string, string> = { "x-aws-ec2-metadata-token-ttl-seconds": "60" }) =>
  fetch(`${imds}/latest/api/token`, { method: "PUT", headers });

async function token(): Promise<string> {
  const response = await putToken();
  expect(response.status).toBe(200);
  return response.text();
}

async function get(path: string, tokenValue?: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${imds}${path}`, {
    headers: tokenValue === undefined ? {} : { "x-aws-ec2-metadata-token": tokenValue },
  });
  return { status: response.status, text: await response.text() };
}

/** How a token PUT ends within `ms`: "answered", or the name of the error that stopped it. */
const tokenPutWithin = (ms: number): Promise<string> =>
  fetch(`${imds}/latest/api/token`, {
    method: "PUT",
    headers: { "x-aws-ec2-metadata-token-ttl-seconds": "60" },
    signal: AbortSignal.timeout(ms),
  }).then(
    () => "answered",
    (error: unknown) => (error as Error).name,
  );

/** Assigns addresses to the Multus ENI eni-0multus1 through EC2. */
async function assignToMultusEni(ipv4s: string[], ipv6s: string[] = []): Promise<void> {
  const ec2 = ec2ClientFor(sim);
  try {
    await ec2.send(
      new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: "eni-0multus1", PrivateIpAddresses: ipv4s }),
    );
    if (ipv6s.length > 0) {
      await ec2.send(
        new AssignIpv6AddressesCommand({ NetworkInterfaceId: "eni-0multus1", Ipv6Addresses: ipv6s }),
      );
    }
  } finally {
    ec2.destroy();
  }
}

describe("IMDSv2 token protocol", () => {
  it("issues a token for a TTL of 1..21600 seconds and echoes the TTL", async () => {
    await start();
    const response = await putToken({ "x-aws-ec2-metadata-token-ttl-seconds": "21600" });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-aws-ec2-metadata-token-ttl-seconds")).toBe("21600");
    expect((await response.text()).length).toBeGreaterThan(20);
  });

  it.each([["0"], ["21601"], ["abc"], [""]])("answers 400 to TTL %j", async (ttl) => {
    await start();
    expect((await putToken({ "x-aws-ec2-metadata-token-ttl-seconds": ttl })).status).toBe(400);
  });

  it("answers 400 to a token PUT without a TTL header", async () => {
    await start();
    expect((await putToken({})).status).toBe(400);
  });

  it("answers 403 to a token PUT carrying X-Forwarded-For", async () => {
    await start();
    const response = await putToken({
      "x-aws-ec2-metadata-token-ttl-seconds": "60",
      "x-forwarded-for": "192.0.2.9",
    });
    expect(response.status).toBe(403);
  });

  it("answers 401 without a token, with an unknown token, and after the TTL (injected clock)", async () => {
    let now = 5_000_000;
    await start({ clock: { now: () => now, sleep: () => Promise.resolve() } });
    expect((await get("/latest/meta-data/instance-id")).status).toBe(401);
    expect((await get("/latest/meta-data/instance-id", "forged")).status).toBe(401);
    const t = await token();
    expect(await get("/latest/meta-data/instance-id", t)).toEqual({ status: 200, text: "i-0demo1" });
    now += 59_999;
    expect((await get("/latest/meta-data/instance-id", t)).status).toBe(200);
    now += 1;
    expect((await get("/latest/meta-data/instance-id", t)).status).toBe(401);
  });

  it("with httpTokens optional, serves IMDSv1 requests but still refuses a bad token", async () => {
    await start({ world: (w) => ({ ...w, imds: { httpTokens: "optional" } }) });
    expect(await get("/latest/meta-data/instance-id")).toEqual({ status: 200, text: "i-0demo1" });
    expect((await get("/latest/meta-data/instance-id", "forged")).status).toBe(401);
  });

  it("answers 404 to unknown items", async () => {
    await start();
    const t = await token();
    expect((await get("/latest/meta-data/no-such-item", t)).status).toBe(404);
    expect(
      (await get(`/latest/meta-data/network/interfaces/macs/02:00:00:00:ff:ff/interface-id`, t)).status,
    ).toBe(404);
  });
});

describe("IMDS metadata", () => {
  it("serves instance, placement and per-MAC items", async () => {
    await start();
    const t = await token();
    const expected: [string, string][] = [
      ["/latest/meta-data/instance-type", "m5.large"],
      ["/latest/meta-data/placement/region", "us-east-1"],
      ["/latest/meta-data/placement/availability-zone", "us-east-1a"],
      ["/latest/meta-data/mac", "02:00:00:00:0a:01"],
      ["/latest/meta-data/network/interfaces/macs/", `02:00:00:00:0a:01/\n${multusMac}/`],
      [`${macPath}/interface-id`, "eni-0multus1"],
      [`${macPath}/device-number`, "1"],
      [`${macPath}/network-card`, "0"],
      [`${macPath}/subnet-id`, "subnet-0multus"],
      [`${macPath}/vpc-id`, "vpc-0demo"],
      [`${macPath}/subnet-ipv4-cidr-block`, "198.51.100.128/25"],
      [`${macPath}/subnet-ipv6-cidr-blocks`, "2001:db8:100:2::/64"],
      [`${macPath}/local-ipv4s`, "198.51.100.140"],
    ];
    for (const [path, text] of expected)
      expect([path, await get(path, t)]).toEqual([path, { status: 200, text }]);
    for (const item of ["ipv6s", "ipv4-prefix", "ipv6-prefix"]) {
      expect((await get(`${macPath}/${item}`, t)).status).toBe(404);
    }
    const listing = (await get(`${macPath}/`, t)).text.split("\n");
    expect(listing).toEqual(
      expect.arrayContaining(["interface-id", "device-number", "local-ipv4s", "subnet-id"]),
    );
    expect(listing).not.toContain("ipv6s");
    expect((await get("/latest/meta-data/", t)).text.split("\n")).toEqual(
      expect.arrayContaining(["instance-id", "instance-type", "mac", "network/", "placement/"]),
    );
  });

  it("serves the instance identity document", async () => {
    await start();
    const document = JSON.parse(
      (await get("/latest/dynamic/instance-identity/document", await token())).text,
    );
    expect(document).toMatchObject({
      instanceId: "i-0demo1",
      region: "us-east-1",
      availabilityZone: "us-east-1a",
      instanceType: "m5.large",
      accountId: "123456789012",
      privateIp: "198.51.100.10",
    });
  });

  it("tolerates a leading double slash, as @aws-sdk/ec2-metadata-service sends", async () => {
    await start();
    expect(await get("//latest/meta-data/instance-id", await token())).toEqual({
      status: 200,
      text: "i-0demo1",
    });
  });

  it("reflects EC2 assignments: local-ipv4s (primary first) and ipv6s", async () => {
    await start();
    await assignToMultusEni(["198.51.100.200", "198.51.100.201"], ["2001:db8:100:2::c8"]);
    const t = await token();
    expect((await get(`${macPath}/local-ipv4s`, t)).text).toBe(
      "198.51.100.140\n198.51.100.200\n198.51.100.201",
    );
    expect((await get(`${macPath}/ipv6s`, t)).text).toBe("2001:db8:100:2::c8");
  });

  it("shows assignments late under staleReadsMs (IMDS is eventually consistent)", async () => {
    let now = 1_000_000;
    await start({ clock: { now: () => now, sleep: () => Promise.resolve() } });
    sim.setFaults({ staleReadsMs: 2_000 });
    now += 5_000;
    await assignToMultusEni(["198.51.100.200"]);
    const t = await token();
    const path = `${macPath}/local-ipv4s`;
    expect((await get(path, t)).text).toBe("198.51.100.140");
    now += 2_000;
    expect((await get(path, t)).text).toBe("198.51.100.140\n198.51.100.200");
  });
});

describe("IMDS faults", () => {
  it("imdsTokenHang: the token PUT gets no answer within 300 ms, and close() still returns", async () => {
    const log: string[] = [];
    await start({ log: (line) => log.push(line) });
    sim.setFaults({ imdsTokenHang: ["i-0demo1"] });
    expect(await tokenPutWithin(300)).toBe("TimeoutError");
    const hanging = putToken().then(
      () => "answered",
      () => "connection closed",
    );
    // The second PUT has reached the simulator and hangs there (the first one's line is the first).
    await eventually(
      () => log.filter((l) => l === "imds i-0demo1 PUT /latest/api/token (hanging)").length === 2,
      "the second token PUT hanging",
    );
    await sim.close();
    expect(await hanging).toBe("connection closed");
  });

  it("imdsTokenHang: true hangs every instance, other instances' ids leave this one alone", async () => {
    await start();
    sim.setFaults({ imdsTokenHang: ["i-0other"] });
    expect((await putToken()).status).toBe(200);
    sim.setFaults({ imdsTokenHang: true });
    expect(await tokenPutWithin(300)).toBe("TimeoutError");
  });

  it("imdsDisabled answers 403 to everything", async () => {
    await start();
    sim.setFaults({ imdsDisabled: true });
    expect((await putToken()).status).toBe(403);
    expect((await get("/latest/meta-data/instance-id")).status).toBe(403);
  });

  it("imdsLatencyMs delays every answer", async () => {
    await start();
    sim.setFaults({ imdsLatencyMs: 120 });
    const started = performance.now();
    await putToken();
    expect(performance.now() - started).toBeGreaterThanOrEqual(110);
  });
});
