/** IPMGR_STATE_FILE: the pending releases on disk, read at start and rewritten on every change. */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../src/eni/errors/config-error.js";
import { parseJournal, ReleaseJournal } from "../src/sidecar/release-journal.js";
import { captureLogger, silentLogger } from "./helpers/loggers.js";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

let dir: string | undefined;
afterEach(() => {
  removeTempDir(dir);
  dir = undefined;
});

function stateFile(): string {
  dir = makeTempDir("ipmgr-state-");
  return join(dir, "pending-releases.json");
}

describe("ReleaseJournal", () => {
  it("starts with nothing pending when there is no file yet, and keeps what it saves for the next run", () => {
    const path = stateFile();
    const first = ReleaseJournal.open(path, silentLogger());
    expect(first.pending).toEqual([]);
    first.journal.save(new Set(["198.51.100.80", "2001:DB8:100:1:0:0:0:180"]));
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({
      version: 1,
      pendingReleases: ["198.51.100.80", "2001:db8:100:1::180"],
    });
    expect(ReleaseJournal.open(path, silentLogger()).pending).toEqual([
      "198.51.100.80",
      "2001:db8:100:1::180",
    ]);
    first.journal.save([]);
    expect(ReleaseJournal.open(path, silentLogger()).pending).toEqual([]);
  });

  it("refuses a directory that does not exist at start, naming the setting, the directory and the volume", () => {
    const path = join(stateFile(), "..", "missing", "pending-releases.json");
    const missing = join(dir ?? "", "missing");
    let error: unknown;
    try {
      ReleaseJournal.open(path, silentLogger());
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      `IPMGR_STATE_FILE=${JSON.stringify(path)}: the directory ${missing} does not exist or may not be written (ENOENT); ` +
        "mount a volume that survives a container restart there (an emptyDir, as deploy/overlays/sidecar/statefulset-sidecar.yaml does), or unset IPMGR_STATE_FILE",
    );
  });

  it("starts without a file that is not its own, saying so, and rewrites it", () => {
    const path = stateFile();
    writeFileSync(path, "not json");
    const { logger, lines } = captureLogger();
    const { journal, pending } = ReleaseJournal.open(path, logger);
    expect(pending).toEqual([]);
    expect(lines.map((l) => l.msg)).toEqual([
      "IPMGR_STATE_FILE is not a pending-release file of version 1; starting without it (it is rewritten)",
    ]);
    journal.save([]);
    expect(parseJournal(readFileSync(path, "utf8"))).toEqual([]);
  });

  it.each<[string, string[] | undefined]>([
    ['{"version":1,"pendingReleases":["198.51.100.80","nope",7]}', ["198.51.100.80"]],
    ['{"version":2,"pendingReleases":[]}', undefined],
    ['{"version":1}', undefined],
    ["[]", undefined],
    ["null", undefined],
  ])("reads %s as %j", (text, expected) => {
    expect(parseJournal(text)).toEqual(expected);
  });
});
