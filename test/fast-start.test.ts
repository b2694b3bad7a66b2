/**
 * The image's start path, dist/multus-ipmgr.cjs: the CommonJS bundle run with V8's code cache, and the
 * normal start (dist/multus-ipmgr.mjs) with one debug line whenever the cache is missing or does not fit.
 * The stamp rules are pure and tested as a table; the rest runs the built files, copied to a temporary
 * directory where a test can spoil them.
 */
import { spawn } from "node:child_process";
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type CodeCacheStamp,
  decodeCodeCache,
  encodeCodeCache,
  stampMismatch,
} from "../src/cli/code-cache.js";
import { collect, Lab, labUnavailableReason, type RunResult } from "./helpers/netns.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";
import { ALLOWED_CIDRS, ENI, MAC, NODE1, twoNodeWorld } from "./helpers/worlds.js";

const DIST = resolve("dist");
const own: CodeCacheStamp = { bundle: "a".repeat(64), node: process.version, arch: process.arch };

describe("the code cache's stamp", () => {
  it.each<[string, Partial<CodeCacheStamp>, string | undefined]>([
    ["fits when node, architecture and bundle are its own", {}, undefined],
    [
      "fits whatever ran before it was written (the training run)",
      { training: "a fresh start of init" },
      undefined,
    ],
    ["another node version", { node: "v20.0.0" }, `it was made by node v20.0.0, this is ${process.version}`],
    ["another architecture", { arch: "s390x" }, `it was made for s390x, this is ${process.arch}`],
    [
      "another bundle",
      { bundle: "b".repeat(64) },
      `it was made for another cli.cjs (sha256 ${"b".repeat(64)})`,
    ],
  ])("%s", (_name, change, expected) => {
    expect(stampMismatch({ ...own, ...change }, own)).toBe(expected);
  });

  it("reads back what it wrote, V8's data byte for byte", () => {
    const data = Buffer.from([0, 10, 255, 10, 1]);
    const decoded = decodeCodeCache(encodeCodeCache(own, data));
    expect(decoded?.stamp).toEqual(own);
    expect(decoded?.data.equals(data)).toBe(true);
  });

  it.each([
    ["no first line", Buffer.from("abc")],
    ["a first line that is not JSON", Buffer.from("abc\nxyz")],
    ["JSON without the stamp's fields", Buffer.from('{"bundle":1}\nxyz')],
  ])("is not a cache: %s", (_name, file) => {
    expect(decodeCodeCache(file)).toBeUndefined();
  });
});

let dir: string | undefined;
afterEach(() => {
  removeTempDir(dir);
  dir = undefined;
});

/** A copy of dist/ to spoil. */
function distCopy(): string {
  dir = makeTempDir("ipmgr-cli-");
  cpSync(DIST, join(dir, "dist"), { recursive: true });
  return join(dir, "dist");
}

function run(entry: string, args: readonly string[], env: Record<string, string> = {}): Promise<RunResult> {
  const child = spawn(process.execPath, [entry, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", IPMGR_TERMINATION_LOG: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collect(child);
}

const debug = { IPMGR_LOG_LEVEL: "debug" };
const fallbackLines = (stdout: string) =>
  stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === "starting without the code cache");

describe("dist/multus-ipmgr.cjs", () => {
  it.each(["init", "bridge"])(
    "starts %s from its bundle with its cache, silently, and answers as the ESM entry does",
    async (command) => {
      const cjs = await run(join(DIST, "multus-ipmgr.cjs"), [command, "--help"], debug);
      const esm = await run(join(DIST, "multus-ipmgr.mjs"), [command, "--help"], debug);
      expect(cjs).toEqual(esm);
      expect(cjs.code).toBe(0);
      expect(fallbackLines(cjs.stdout)).toEqual([]);
    },
  );

  it("starts the bridge from dist/bridge.cjs: its cache spoilt, the bridge falls back and the others do not", async () => {
    const dist = distCopy();
    writeFileSync(join(dist, "bridge.cjs.cache"), "");
    const bridge = await run(join(dist, "multus-ipmgr.cjs"), ["bridge", "--version"], debug);
    expect(bridge.stdout).toContain("multus-ipmgr 0.1.0\n");
    expect(fallbackLines(bridge.stdout).map((l) => l.reason)).toEqual([
      `${join(dist, "bridge.cjs.cache")} is not a code cache of multus-ipmgr`,
    ]);
    const init = await run(join(dist, "multus-ipmgr.cjs"), ["init", "--version"], debug);
    expect(init.stdout).toBe("multus-ipmgr 0.1.0\n");
  });

  it("exits with the dispatcher's code and usage for an unknown command", async () => {
    const result = await run(join(DIST, "multus-ipmgr.cjs"), ["nope"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('multus-ipmgr: unknown command "nope"');
  });

  it("falls back to the normal start, with one debug line, when the cache is missing", async () => {
    const dist = distCopy();
    rmSync(join(dist, "cli.cjs.cache"));
    const result = await run(join(dist, "multus-ipmgr.cjs"), ["--version"], debug);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("multus-ipmgr 0.1.0\n");
    expect(fallbackLines(result.stdout)).toEqual([
      expect.objectContaining({
        level: 20,
        reason: `${join(dist, "cli.cjs.cache")} cannot be read (ENOENT)`,
      }),
    ]);
  });

  it("falls back when the cache was made by another node, and says so only at debug level", async () => {
    const dist = distCopy();
    const path = join(dist, "cli.cjs.cache");
    const cache = decodeCodeCache(readFileSync(path));
    if (cache === undefined) throw new Error("dist/cli.cjs.cache is not a code cache");
    writeFileSync(path, encodeCodeCache({ ...cache.stamp, node: "v20.0.0" }, cache.data));
    const loud = await run(join(dist, "multus-ipmgr.cjs"), ["init", "--help"], debug);
    expect(loud.code).toBe(0);
    expect(fallbackLines(loud.stdout).map((l) => l.reason)).toEqual([
      `${path} does not fit: it was made by node v20.0.0, this is ${process.version}`,
    ]);
    expect(loud.stdout).toContain("usage: multus-ipmgr init [flags]");
    const quiet = await run(join(dist, "multus-ipmgr.cjs"), ["--version"]);
    expect(quiet.stdout).toBe("multus-ipmgr 0.1.0\n");
  });

  it("falls back when the bundle is not the one the cache was made for", async () => {
    const dist = distCopy();
    writeFileSync(join(dist, "cli.cjs"), `${readFileSync(join(dist, "cli.cjs"), "utf8")}\n// edited\n`);
    const result = await run(join(dist, "multus-ipmgr.cjs"), ["--version"], debug);
    expect(result.code).toBe(0);
    expect(fallbackLines(result.stdout).map((l) => l.reason)).toEqual([
      expect.stringMatching(
        /cli\.cjs\.cache does not fit: it was made for another cli\.cjs \(sha256 [0-9a-f]{64}\)$/,
      ),
    ]);
  });
});

const unavailable = labUnavailableReason();
if (unavailable !== undefined) console.warn(`fast start end-to-end test skipped: ${unavailable}`);

describe.skipIf(unavailable !== undefined)("dist/multus-ipmgr.cjs in a pod namespace", () => {
  let lab: Lab | undefined;
  afterEach(async () => {
    await lab?.close();
    lab = undefined;
  });

  /** A lab with one pod on NODE1 whose net1 carries `address`; returns the pod's namespace. */
  async function onePod(address: string): Promise<{ lab: Lab; ns: string }> {
    lab = await Lab.start(twoNodeWorld(), [
      {
        name: "pod",
        instanceId: NODE1,
        interfaces: [{ name: "net1", mac: MAC.node1A1, addresses: [address] }],
      },
    ]);
    const ns = lab.pods.get("pod")?.ns;
    if (ns === undefined) throw new Error("no pod");
    return { lab, ns };
  }

  it("runs init from the cached bundle: one EC2 call on a fresh start, none on the rerun", async () => {
    const { lab, ns } = await onePod("198.51.100.40/26");
    const env = lab.env("pod", { IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS, ...debug });
    const init = () =>
      collect(
        spawn("ip", ["netns", "exec", ns, process.execPath, join(DIST, "multus-ipmgr.cjs"), "init"], {
          env,
          stdio: ["ignore", "pipe", "pipe"],
        }),
      );
    const fresh = await init();
    expect(fresh.stderr).toBe("");
    expect(fresh.code).toBe(0);
    expect(fallbackLines(fresh.stdout)).toEqual([]);
    expect((await lab.eni(ENI.node1A1)).ipv4s).toEqual(["198.51.100.11", "198.51.100.40"]);
    expect((await lab.calls()).map((c) => c.action)).toEqual(["AssignPrivateIpAddresses"]);
    await lab.clearCalls();
    const rerun = await init();
    expect(rerun.code).toBe(0);
    expect(await lab.calls()).toEqual([]);
  });

  it("loads none of Node's modules that init does not use, and on a rerun neither the SDK's HTTPS nor fs/promises", async () => {
    const { lab, ns } = await onePod("198.51.100.41/26");
    dir = makeTempDir("ipmgr-cli-");
    // --require is Node's option, not V8's: the code cache still fits (no fallback line below).
    const hook = join(dir, "modules.cjs");
    writeFileSync(
      hook,
      `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(join(dir, "modules.json"))}, JSON.stringify(process.moduleLoadList)));`,
    );
    const env = lab.env("pod", { IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS, ...debug });
    const init = async (): Promise<string[]> => {
      const result = await collect(
        spawn(
          "ip",
          ["netns", "exec", ns, process.execPath, "--require", hook, join(DIST, "multus-ipmgr.cjs"), "init"],
          {
            env,
            stdio: ["ignore", "pipe", "pipe"],
          },
        ),
      );
      expect(result.code).toBe(0);
      expect(fallbackLines(result.stdout)).toEqual([]);
      const loaded = JSON.parse(readFileSync(join(dir as string, "modules.json"), "utf8")) as string[];
      return loaded.filter((m) => m.startsWith("NativeModule ")).map((m) => m.slice("NativeModule ".length));
    };
    // pino's transport and its worker_threads, sonic-boom's assert, p-retry's perf_hooks (scripts/build.mjs).
    const unused = ["worker_threads", "assert", "perf_hooks"];
    const fresh = await init();
    expect((await lab.calls()).map((c) => c.action)).toEqual(["AssignPrivateIpAddresses"]);
    expect(fresh).toEqual(expect.arrayContaining(["http", "https", "crypto"]));
    expect(fresh.filter((m) => unused.includes(m))).toEqual([]);
    const rerun = await init();
    expect(rerun).toContain("http");
    expect(rerun.filter((m) => [...unused, "https", "tls", "fs/promises"].includes(m))).toEqual([]);
  });
});
