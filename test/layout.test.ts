/**
 * The folders of src/ depend on each other one way only: a command (init, sidecar, the bridge, doctor, the
 * simulator) builds on the core (src/eni) and never on another command; src/cli, the dispatcher, starts the
 * commands; the core knows no command. The simulator keeps its own code apart from the core's process
 * plumbing (src/eni/process: clock, settings names): it must not share the code it is there to check.
 * Build-time tooling (the code cache's writer and training run) lives in scripts/, out of src/.
 * Every import counts, type-only and dynamic ones too (read with TypeScript's own pre-processor, which skips
 * comments).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..");
const SRC = join(ROOT, "src");

const COMMANDS = ["init", "sidecar", "ipam-whereabouts-bridge", "doctor", "sim"] as const;
const CORE = "eni";
const DISPATCHER = "cli";

/**
 * Imports of the core by the simulator outside src/eni/process, each with the reason it is still there
 * (`from -> to`: reason). None now: the simulator keeps its own IP helpers, apart from the code it checks.
 */
const SIM_CORE_EXCEPTIONS: ReadonlyMap<string, string> = new Map();

interface Edge {
  /** The importing file, relative to the repository root. */
  readonly from: string;
  /** The imported file, relative to the repository root (`.js` specifiers name `.ts` sources). */
  readonly to: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => join(e.parentPath, e.name));
}

/** Every relative import of every file under src/, static, type-only and dynamic alike. */
function importEdges(): Edge[] {
  return sourceFiles(SRC).flatMap((file) => {
    const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    return info.importedFiles
      .filter((f) => f.fileName.startsWith("."))
      .map((f) => ({
        from: relative(ROOT, file),
        to: relative(ROOT, resolve(dirname(file), f.fileName)).replace(/\.js$/, ".ts"),
      }));
  });
}

/** The folder of src/ a path lies in: `src/sidecar/sidecar.ts` is in `sidecar`. */
const folderOf = (path: string): string | undefined => path.split("/")[1];
const show = (edges: readonly Edge[]): string[] => edges.map((e) => `${e.from} -> ${e.to}`);

describe("the folders of src/ import each other one way only", () => {
  const edges = importEdges();

  it("the import reader sees static, type-only and dynamic imports (checked on known ones)", () => {
    const seen = show(edges);
    expect(seen).toContain("src/cli/dispatch.ts -> src/init/main.ts"); // dynamic import()
    expect(seen).toContain("src/sidecar/sidecar.ts -> src/eni/reconcile.ts"); // import type
    expect(seen).toContain("src/init/run-init.ts -> src/eni/reconcile-once.ts"); // static import
  });

  it("every folder of src/ is a command, the core or the dispatcher", () => {
    const folders = readdirSync(SRC, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(folders).toEqual([...COMMANDS, CORE, DISPATCHER].sort());
  });

  it.each(COMMANDS)("%s imports no other command and not the dispatcher", (command) => {
    const wrong = edges.filter((e) => {
      if (folderOf(e.from) !== command) return false;
      const to = folderOf(e.to);
      return to === DISPATCHER || (to !== command && (COMMANDS as readonly string[]).includes(to ?? ""));
    });
    expect(show(wrong)).toEqual([]);
  });

  it("nothing in src/ imports from outside it: build-time tooling (scripts/) is no part of a command", () => {
    const wrong = edges.filter((e) => !e.to.startsWith("src/"));
    expect(show(wrong)).toEqual([]);
  });

  it("the core imports no command and not the dispatcher", () => {
    const wrong = edges.filter((e) => folderOf(e.from) === CORE && folderOf(e.to) !== CORE);
    expect(show(wrong)).toEqual([]);
  });

  it("the simulator imports nothing of the core but its process plumbing (src/eni/process)", () => {
    const wrong = edges.filter(
      (e) =>
        folderOf(e.from) === "sim" &&
        folderOf(e.to) === CORE &&
        !e.to.startsWith("src/eni/process/") &&
        !SIM_CORE_EXCEPTIONS.has(`${e.from} -> ${e.to}`),
    );
    expect(show(wrong)).toEqual([]);
  });
});
