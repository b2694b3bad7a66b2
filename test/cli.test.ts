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
      // The sentence and the class, no stack trace of the bundle: that is at debug.
      expect(lines[0]?.err).toEqual({ type: "ConfigError", variable: "IPMGR_ALLOWED_CIDRS", value: "pods" });
    },
  );

  it("a configuration error's stack is logged at debug only", async () => {
    const result = await runBinary(["init"], { IPMGR_ALLOWED_CIDRS: "pods", IPMGR_LOG_LEVEL: "debug" });
    expect(result.code).toBe(2);
    const lines = logLines(result.stdout);
    expect(lines.map((l) => l.level)).toEqual([50, 20]);
    expect(lines[1]?.err).toMatchObject({ stack: expect.stringContaining("ConfigError") });
  });

  it('a flag without its value is a configuration error, not the text "true"', async () => {
    const result = await runBinary(["init", "--allowed-cidrs"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "multus-ipmgr init: --allowed-cidrs=(unset): given without a value; write --allowed-cidrs=VALUE or --allowed-cidrs VALUE (the value follows the flag; see --help)\n",
    );
  });

  it("IPMGR_INTERFACES of separators only exits 2 before any IMDS call", async () => {
    const result = await runBinary(["init"], {
      IPMGR_ALLOWED_CIDRS: "198.51.100.64/27",
      IPMGR_INTERFACES: " , ",
      AWS_EC2_METADATA_SERVICE_ENDPOINT: await closedPortUrl(),
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'multus-ipmgr init: IPMGR_INTERFACES=" , ": holds only separators and no item; write the items, e.g. net1,net2 or net*, or leave it empty (every interface not excluded is managed)\n',
    );
  });

  it("IPMGR_EC2_RETRY_BASE_MS above its cap exits 2", async () => {
    const result = await runBinary(["sidecar"], {
      IPMGR_ALLOWED_CIDRS: "198.51.100.64/27",
      IPMGR_EC2_RETRY_BASE_MS: "6000",
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'IPMGR_EC2_RETRY_BASE_MS="6000": must be at most IPMGR_EC2_RETRY_MAX_MS (5000 ms)',
    );
  });
});

describe("names it does not know", () => {
  it("warns once per unknown IPMGR_* variable, with the nearest known name, and runs on", async () => {
    const result = await runBinary(["init"], {
      IPMGR_ALLOWED_CIDRS: "198.51.100.64/27",
      IPMGR_TIMOUT_MS: "5000",
      IPMGR_INTERFACE: "net1",
      IPMGR_IMDS_TIMEOUT_MS: "200",
      IPMGR_WAIT_FOR_ADDRESSES_MS: "0",
      AWS_EC2_METADATA_SERVICE_ENDPOINT: await closedPortUrl(),
    });
    const warnings = logLines(result.stdout).filter((line) => line.level === 40 && "variable" in line);
    expect(warnings.map((w) => [w.variable, w.didYouMean, w.msg])).toEqual([
      [
        "IPMGR_INTERFACE",
        "IPMGR_INTERFACES",
        "IPMGR_INTERFACE is not a variable of multus-ipmgr and changes nothing; did you mean IPMGR_INTERFACES?",
      ],
      [
        "IPMGR_TIMOUT_MS",
        "IPMGR_TIMEOUT_MS",
        "IPMGR_TIMOUT_MS is not a variable of multus-ipmgr and changes nothing; did you mean IPMGR_TIMEOUT_MS?",
      ],
    ]);
  });

  it("suggests the nearest command for an unknown one", async () => {
    const result = await runBinary(["sidcar"]);
    expect(result.code).toBe(2);
    expect(result.stderr.split("\n")[0]).toBe(
      'multus-ipmgr: unknown command "sidcar"; did you mean sidecar?',
    );
  });

  it("suggests the nearest flag for an unknown one", async () => {
    const result = await runBinary(["init", "--timout-ms=5000"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'multus-ipmgr init: --timout-ms="5000": unknown flag; did you mean --timeout-ms? (--help lists them)\n',
    );
  });
});

describe("--help", () => {
  it.each(["init", "sidecar", "bridge", "doctor", "links"])(
    "%s --help: every line fits 100 columns",
    async (command) => {
      const result = await runBinary([command, "--help"]);
      expect(result.code).toBe(0);
      const long = result.stdout.split("\n").filter((line) => line.length > 100);
      expect(long).toEqual([]);
    },
  );

  it("names each whole-number setting's range", async () => {
    const result = await runBinary(["init", "--help"]);
    expect(result.stdout).toContain(
      "--ec2-retry-base-ms  (IPMGR_EC2_RETRY_BASE_MS, default 200, 1 to 60000 ms)",
    );
  });
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

  it("offers only the options doctor uses", async () => {
    const result = await runBinary(["doctor", "--help"]);
    for (const unused of [
      "--termination-log",
      "--elastic-ips",
      "--wait-for-addresses-ms",
      "--confirm-timeout-ms",
    ]) {
      expect(result.stdout).not.toContain(unused);
    }
    const refused = await runBinary(["doctor", "--termination-log", "/tmp/x"]);
    expect(refused.code).toBe(2);
  });
});
