/**
 * Temporary directories of the test suite. Each carries the tag of the run that made it (set by
 * global-setup.ts), so that the suite's leak check, at the end of the run, finds the ones a test forgot to
 * remove without ever mistaking another run's directories on the same machine for ours.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Prefixes of the suite's temporary directories, each followed by the run tag, a dash and random letters. */
export const TEMP_DIR_PREFIXES = [
  "sim-world-",
  "ipmgr-podinfo-",
  "ipmgr-lab-",
  "ipmgr-cli-",
  "ipmgr-sysfs-",
  "ipmgr-kube-",
  "ipmgr-path-",
  "ipmgr-state-",
  "ipmgr-sa-",
  "ipmgr-sysnet-",
  "ipmgr-node-",
  "ipmgr-cni-",
] as const;
export type TempDirPrefix = (typeof TEMP_DIR_PREFIXES)[number];

/** The environment variable through which global-setup.ts hands the run tag to the test workers. */
export const RUN_TAG_VARIABLE = "IPMGR_TEST_RUN_TAG";

function runTag(): string {
  return process.env[RUN_TAG_VARIABLE] ?? "untagged";
}

/** Makes `<tmpdir>/<prefix><run tag>-XXXXXX`. The caller removes it with removeTempDir, also on failure. */
export function makeTempDir(prefix: TempDirPrefix): string {
  return mkdtempSync(join(tmpdir(), `${prefix}${runTag()}-`));
}

export function removeTempDir(dir: string | undefined): void {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}

/**
 * The suite's temporary directories of the run tagged `tag` still present, made at or after `sinceMs`
 * (a tag is the run's process id, which a later run may reuse).
 */
export function leftTempDirs(tag: string, sinceMs: number): string[] {
  const left: string[] = [];
  for (const name of readdirSync(tmpdir())) {
    if (!TEMP_DIR_PREFIXES.some((prefix) => name.startsWith(`${prefix}${tag}-`))) continue;
    const path = join(tmpdir(), name);
    try {
      if (statSync(path).mtimeMs >= sinceMs) left.push(path);
    } catch (error) {
      // Removed between the listing and the stat: not left behind.
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
  return left.sort();
}
