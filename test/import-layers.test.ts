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
