import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/** The relative modules `file` imports or re-exports, as paths from the repository root (`.ts`). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
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
});
