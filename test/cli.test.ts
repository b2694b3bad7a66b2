/**
 * The built binary's dispatcher and failure reporting, run as users run it (no network: each run fails or
 * ends before it would reach IMDS).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { closedPortUrl } from "./helpers/closed-port.js";
import { BINARY, collect, type RunResult } from "./helpers/netns.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

function runBinary(args: readonly string[], env: Record<string, string> = {}): Promise<RunResult> {
  const child = spawn(process.execPath, [BINARY, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", IPMGR_TERMINATION_LOG: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collect(child);
}

/** The JSON log lines of a run's stdout. */
function logLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("a failure before the command's logger exists", () => {
  let dir: string | undefined;
  afterEach(() => {
    removeTempDir(dir);
    dir = undefined;
  });

  it.each(["init", "sidecar"])(
    "%s: a configuration error reaches stderr, the JSON log on stdout and the termination log",
    async (command) => {
      dir = makeTempDir("ipmgr-cli-");
      const terminationLog = join(dir, "termination-log");
      const result = await runBinary([command], {
        IPMGR_ALLOWED_CIDRS: "pods",
        IPMGR_TERMINATION_LOG: terminationLog,
      });
      const sentence = 'IPMGR_ALLOWED_CIDRS="pods": "pods" is not a CIDR; write it like 198.51.100.64/27';
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`multus-ipmgr ${command}: ${sentence}\n`);
      expect(readFileSync(terminationLog, "utf8")).toBe(`${sentence}\n`);
      const lines = logLines(result.stdout);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ level: 50, command, msg: sentence, exitCode: 2 });
      expect(lines[0]?.err).toMatchObject({ type: "ConfigError" });
    },
  );
});

describe("sidecar: an HTTP server that cannot listen", () => {
  let taken: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (taken === undefined ? resolve() : taken.close(() => resolve())));
    taken = undefined;
  });

  it("exits 2 naming IPMGR_HTTP_PORT when its port is in use, before any IMDS or EC2 call", async () => {
    const server = createServer();
    taken = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    const result = await runBinary(["sidecar"], {
      IPMGR_ALLOWED_CIDRS: "198.51.100.64/27",
      IPMGR_ADDRESS_EVENTS: "poll",
      IPMGR_HTTP_HOST: "127.0.0.1",
      IPMGR_HTTP_PORT: String(port),
      AWS_EC2_METADATA_SERVICE_ENDPOINT: await closedPortUrl(),
    });
    const sentence = `IPMGR_HTTP_PORT="${port}": port ${port} on 127.0.0.1 is already in use (EADDRINUSE); set IPMGR_HTTP_PORT to a free port, and the probes' port with it`;
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`multus-ipmgr sidecar: ${sentence}\n`);
    expect(logLines(result.stdout).at(-1)).toMatchObject({ level: 50, msg: sentence, exitCode: 2 });
  });

  it("exits 2 naming IPMGR_HTTP_HOST when it is not an IP address", async () => {
    const result = await runBinary(["sidecar"], {
      IPMGR_ALLOWED_CIDRS: "198.51.100.64/27",
      IPMGR_HTTP_HOST: "not-an-ip",
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'multus-ipmgr sidecar: IPMGR_HTTP_HOST="not-an-ip": expected an IP address, e.g. 0.0.0.0 (every IPv4 address), :: (every address) or one of the pod\'s addresses\n',
    );
  });
});

describe("--version", () => {
  const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };

  it.each([
    ["--version"],
    ["-V"],
    ["init", "--version"],
    ["sidecar", "--version"],
    ["doctor", "-V"],
    ["sim", "-V"],
  ])("%s prints the version of package.json and exits 0", async (...args) => {
    const result = await runBinary(args);
    expect(result).toMatchObject({ code: 0, stdout: `multus-ipmgr ${version}\n`, stderr: "" });
  });
});

describe("doctor", () => {
  let dir: string | undefined;
  afterEach(() => {
    removeTempDir(dir);
    dir = undefined;
  });

  it("exits 2 on a bad setting, on stderr only: stdout is the report's, the termination log init's", async () => {
    dir = makeTempDir("ipmgr-cli-");
    const terminationLog = join(dir, "termination-log");
    const result = await runBinary(["doctor", "--json", "yes"], { IPMGR_TERMINATION_LOG: terminationLog });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    const [line, sentence, ...rest] = result.stderr.split("\n");
    expect(JSON.parse(line ?? "")).toMatchObject({ level: 50, command: "doctor", exitCode: 2 });
    expect(sentence).toBe('multus-ipmgr doctor: --json="yes": expected true or false');
    expect(rest).toEqual([""]);
    expect(() => readFileSync(terminationLog)).toThrow(/ENOENT/);
  });

  it("lists every flag with its variable in --help", async () => {
    const result = await runBinary(["doctor", "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("--json  (IPMGR_DOCTOR_JSON, default false)");
    expect(result.stdout).toContain("--address-events  (IPMGR_ADDRESS_EVENTS, default auto)");
    expect(result.stdout).toContain("--allowed-cidrs  (IPMGR_ALLOWED_CIDRS, default (unset))");
  });
});
