/**
 * The built bundles load without any deprecation warning, even those Node only announces: every module
 * of dist/ is imported by a node started with `--pending-deprecation --throw-deprecation`, so that a
 * warning newer Nodes print at every start (as Node 24 did for `punycode`, which client-node's fetch
 * required, on each start of the bridge in the image) fails here on any Node.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const DIST = resolve("dist");
const unbuilt = !existsSync(join(DIST, "multus-ipmgr.mjs")) && process.env.IPMGR_TEST_SKIP_BUILD === "1";

/** Imports the given modules in a fresh node that throws on any deprecation; resolves with its stderr. */
function importStrictly(files: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  const urls = JSON.stringify(files.map((f) => pathToFileURL(f).href));
  const script = `for (const url of ${urls}) await import(url);`;
  return new Promise((done) => {
    const child = spawn(
      process.execPath,
      ["--pending-deprecation", "--throw-deprecation", "--input-type=module", "-e", script],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.once("exit", (code) => done({ code, stderr }));
  });
}

describe.skipIf(unbuilt)("the bundles in dist/", () => {
  it("load without a deprecation warning (punycode taken from npm, not Node's deprecated module)", async () => {
    // The chunks hold the code of every command (the entries would run a command): the Kubernetes
    // client's among them. The simulator's bundle starts its servers only when asked.
    const chunks = readdirSync(join(DIST, "chunks"))
      .filter((f) => f.endsWith(".mjs"))
      .map((f) => join(DIST, "chunks", f));
    expect(chunks.some((f) => /kube-client-/.test(f))).toBe(true);
    const result = await importStrictly([...chunks, join(DIST, "sim.mjs")]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
  });
});
