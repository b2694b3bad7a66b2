import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/** The relative modules `file` imports or re-exports, as paths from the repository root (`.ts`). */
function importsOf(file: string): string[] {
  // Comments may name a module (`await import("./ec2-client.js")` in a doc comment): they import nothing.
  const text = readFileSync(file, "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/^\s*\/\/.*$/gm, "");
  return [...text.matchAll(/(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"|import\("(\.[^"]+)"\)/gs)].map((m) =>
    relative(".", resolve(dirname(file), (m[1] ?? m[2] ?? "").replace(/\.js$/, ".ts"))),
  );
}

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts"))
    .map((name) => join(dir, name));
}

describe("import layers", () => {
  it("the error classes import nothing from the process plumbing (src/eni/process/ imports them, not the reverse)", () => {
    const upward = sourcesUnder("src/eni/errors").flatMap((file) =>
      importsOf(file)
        .filter((target) => target.startsWith("src/eni/process/"))
        .map((target) => `${file} -> ${target}`),
    );
    expect(upward).toEqual([]);
  });

  it("each command's settings import no other command: what two commands share is in src/eni/process/config.ts", () => {
    const commands = ["src/init", "src/sidecar", "src/doctor", "src/ipam-whereabouts-bridge"];
    const crossing = commands.flatMap((own) =>
      importsOf(`${own}/settings.ts`)
        .filter((target) => commands.some((other) => other !== own && target.startsWith(`${other}/`)))
        .map((target) => `${own}/settings.ts -> ${target}`),
    );
    expect(crossing).toEqual([]);
  });

  it("no files import each other in a loop, type imports included (src/)", () => {
    const graph = new Map(sourcesUnder("src").map((file) => [file, importsOf(file)]));
    expect(importLoops(graph)).toEqual([]);
  });

  it("the bridge's rooms import only rooms on a lower floor, never a sibling's or the composition root's", () => {
    const upward = sourcesUnder(BRIDGE).flatMap((file) =>
      importsOf(file)
        .filter((target) => target.startsWith(`${BRIDGE}/`) && !floorAllows(roomOf(file), roomOf(target)))
        .map((target) => `${file} (${roomOf(file)}) -> ${target} (${roomOf(target)})`),
    );
    expect(upward).toEqual([]);
  });

  it("every file of the bridge is in a room with a floor, or in the composition root", () => {
    const unplaced = sourcesUnder(BRIDGE)
      .map(roomOf)
      .filter((room) => room !== ROOT && !BRIDGE_FLOORS.has(room));
    expect([...new Set(unplaced)]).toEqual([]);
  });

  it("the floor check refuses a sibling and an upward import, and allows a downward one", () => {
    expect(floorAllows("waves", "state")).toBe(true);
    expect(floorAllows("waves", "waves")).toBe(true);
    expect(floorAllows(ROOT, "kube")).toBe(true);
    expect(floorAllows("waves", "prefixes")).toBe(false);
    expect(floorAllows("kube", "state")).toBe(false);
    expect(floorAllows("state", ROOT)).toBe(false);
  });

  it("finds a loop when there is one (the check itself works)", () => {
    const graph = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["c.ts"]],
      ["c.ts", ["a.ts", "d.ts"]],
      ["d.ts", []],
      ["e.ts", ["e.ts"]],
    ]);
    expect(importLoops(graph)).toEqual([["a.ts", "b.ts", "c.ts"], ["e.ts"]]);
  });
});

const BRIDGE = "src/ipam-whereabouts-bridge";
/** The composition root: the files directly in the bridge's folder (main, lifecycle, options, settings, the loop). */
const ROOT = "(root)";
/**
 * The bridge's rooms and their floors (docs/development.md, the table of rooms): a room imports from rooms on
 * lower floors only, the composition root from any room. `kube/errors/` is part of `kube/`.
 */
const BRIDGE_FLOORS = new Map<string, number>([
  ["kube", 0],
  ["node", 0],
  ["telemetry", 1],
  ["state", 1],
  ["waves", 2],
  ["prefixes", 2],
  ["reservations", 2],
  ["links", 1],
  ["attach", 2],
  ["startup-taint", 3],
  ["cni", 3],
]);

/** The room of one of the bridge's files: its first folder under the bridge, or ROOT. */
function roomOf(file: string): string {
  const parts = relative(BRIDGE, file).split("/");
  return parts.length === 1 ? ROOT : (parts[0] ?? ROOT);
}

function floorAllows(from: string, to: string): boolean {
  if (from === to || from === ROOT) return true;
  const own = BRIDGE_FLOORS.get(from);
  const target = BRIDGE_FLOORS.get(to);
  return own !== undefined && target !== undefined && target < own;
}

/** The import loops of `graph` (file -> imported files): its strongly connected components of more than one
 *  file, and files that import themselves; each sorted, in file order. Tarjan's algorithm. */
function importLoops(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next);
    next += 1;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(target) ?? 0));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file) ?? 0, index.get(target) ?? 0));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) loops.push(component.sort());
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) visit(file);
  return loops.sort((a, b) => (a[0] ?? "").localeCompare(b[0] ?? ""));
}
