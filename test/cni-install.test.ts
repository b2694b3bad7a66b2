/**
 * native/cni-plugin/install.sh, the bridge's init container step that puts the CNI plugin into the node's
 * /opt/cni/bin (docs/cni-plugin.md): an atomic rename over the old file, so that a runtime running the old
 * plugin keeps running it, and nothing half-written is ever there to start.
 */
import { spawn, spawnSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const INSTALL = resolve("native/cni-plugin/install.sh");

let dir = "";
let bin = "";
let source = "";
beforeEach(() => {
  dir = makeTempDir("ipmgr-cni-");
  bin = join(dir, "opt-cni-bin");
  mkdirSync(bin);
  source = join(dir, "multus-ipmgr");
  writeFileSync(source, "#!/bin/sh\necho new\n", { mode: 0o600 });
});
afterEach(() => removeTempDir(dir));

const install = (...args: string[]) => spawnSync("sh", [INSTALL, ...args], { encoding: "utf8" });

describe("native/cni-plugin/install.sh", () => {
  it("copies the plugin into the directory as multus-ipmgr, mode 0755, leaving no temporary file", () => {
    const r = install(source, bin);
    expect([r.status, r.stdout, r.stderr]).toEqual([0, `cni-install: installed ${bin}/multus-ipmgr\n`, ""]);
    expect(readFileSync(join(bin, "multus-ipmgr"), "utf8")).toBe("#!/bin/sh\necho new\n");
    expect(statSync(join(bin, "multus-ipmgr")).mode & 0o777).toBe(0o755);
    expect(readdirSync(bin)).toEqual(["multus-ipmgr"]);
  });

  it("replaces a plugin a runtime is running by a rename: the running one keeps its file, the next start gets the new one", async () => {
    // The old plugin, running: a copy of sleep started from the target path.
    copyFileSync("/bin/sleep", join(bin, "multus-ipmgr"));
    const running = spawn(join(bin, "multus-ipmgr"), ["30"], { stdio: "ignore" });
    try {
      await new Promise<void>((resolveSpawn, reject) => {
        running.once("spawn", resolveSpawn);
        running.once("error", reject);
      });
      const oldInode = statSync(join(bin, "multus-ipmgr")).ino;
      // Writing into a running executable fails with "Text file busy"; the installer never does.
      const r = install(source, bin);
      expect([r.status, r.stderr]).toEqual([0, ""]);
      expect(statSync(join(bin, "multus-ipmgr")).ino).not.toBe(oldInode);
      expect(readlinkSync(`/proc/${running.pid}/exe`)).toBe(`${join(bin, "multus-ipmgr")} (deleted)`);
      expect(running.exitCode).toBeNull();
      expect(spawnSync(join(bin, "multus-ipmgr"), { encoding: "utf8" }).stdout).toBe("new\n");
      expect(readdirSync(bin)).toEqual(["multus-ipmgr"]);
    } finally {
      running.kill("SIGKILL");
    }
  });

  it("leaves an identical plugin alone (the same file, not rewritten)", () => {
    expect(install(source, bin).status).toBe(0);
    const before = statSync(join(bin, "multus-ipmgr")).ino;
    const r = install(source, bin);
    expect([r.status, r.stdout]).toEqual([0, `cni-install: ${bin}/multus-ipmgr is already current\n`]);
    expect(statSync(join(bin, "multus-ipmgr")).ino).toBe(before);
  });

  it("exits 2 naming the missing source or directory, and writes nothing", () => {
    const noSource = install(join(dir, "absent"), bin);
    expect([noSource.status, noSource.stderr]).toEqual([
      2,
      `cni-install: no plugin at ${join(dir, "absent")}: the image ships it at /app/cni/multus-ipmgr\n`,
    ]);
    const noDir = install(source, join(dir, "absent"));
    expect([noDir.status, noDir.stderr]).toEqual([
      2,
      `cni-install: ${join(dir, "absent")} is not a directory: mount the node's /opt/cni/bin there (a hostPath volume)\n`,
    ]);
    expect(readdirSync(bin)).toEqual([]);
  });

  it("exits 1 and removes its temporary file when the rename fails (a directory in the way)", () => {
    mkdirSync(join(bin, "multus-ipmgr"));
    writeFileSync(join(bin, "multus-ipmgr", "keep"), "");
    const r = install(source, bin);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("multus-ipmgr");
    expect(readdirSync(bin)).toEqual(["multus-ipmgr"]);
    expect(readdirSync(join(bin, "multus-ipmgr"))).toEqual(["keep"]);
  });
});
