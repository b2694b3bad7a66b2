/**
 * The built binary's dispatcher and failure reporting, run as users run it (no network: each run fails or
 * ends before it would reach IMDS).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
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
