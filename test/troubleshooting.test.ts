import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ExitCode } from "../src/eni/errors/exit-codes.js";

const page = readFileSync("docs/troubleshooting.md", "utf8");

/** The text of docs/troubleshooting.md's section `heading` (a `## ` heading), up to the next `## `. */
function section(heading: string): string {
  const start = page.indexOf(`\n## ${heading}\n`);
  expect(start, `docs/troubleshooting.md has no section "## ${heading}"`).toBeGreaterThanOrEqual(0);
  const end = page.indexOf("\n## ", start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

/** Every `errors/` folder under src/, at any depth. */
function errorFolders(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => {
      const path = join(dir, e.name);
      return e.name === "errors" ? [path] : errorFolders(path);
    });
}

/**
 * The simulator's API errors are answers to HTTP clients (EC2's and the Kubernetes API's own error
 * documents; Ec2ModelError is an Ec2ApiError from the EC2 model), never printed by a command: the
 * simulator's documentation covers them.
 */
const NOT_PRINTED = new Set(["Ec2ApiError", "Ec2ModelError", "KubeApiError"]);

const errorClasses = errorFolders("src").flatMap((folder) =>
  readdirSync(folder)
    .filter((f) => f.endsWith(".ts"))
    .flatMap((f) =>
      [...readFileSync(join(folder, f), "utf8").matchAll(/export class (\w+) extends/g)].map((m) => ({
        name: m[1] ?? "",
        file: join(folder, f),
      })),
    ),
);

describe("docs/troubleshooting.md", () => {
  const troubleshooting = section("Every error, by exit code");

  it("finds the error classes (the scan itself works)", () => {
    const names = errorClasses.map((c) => c.name);
    expect(names).toContain("ConfigError");
    expect(names).toContain("KubeError");
    expect(names).toContain("AddressEventsUnavailableError");
    expect(names).toContain("WorldError");
  });

  it("has an entry for every error class a command can print", () => {
    const missing = errorClasses
      .filter((c) => !NOT_PRINTED.has(c.name))
      .filter((c) => !troubleshooting.includes(`\`${c.name}\``))
      .map((c) => `${c.name} (${c.file})`);
    expect(missing, "add each to docs/troubleshooting.md: its sentence, cause and fix").toEqual([]);
  });

  it("has an entry for every reason the planner refuses an address for", () => {
    const types = readFileSync("src/eni/types.ts", "utf8");
    const union = /export type RefusalReason =([^;]+);/.exec(types)?.[1] ?? "";
    const reasons = [...union.matchAll(/\| "([a-z-]+)"/g)].map((m) => m[1] ?? "");
    expect(reasons.length).toBeGreaterThanOrEqual(5);
    expect(reasons.filter((r) => !troubleshooting.includes(`| \`${r}\` |`))).toEqual([]);
  });

  it("covers every exit code but 0, and Exit codes lists each of them with 130 and 143", () => {
    const codes = Object.values(ExitCode).filter((c) => c !== 0);
    expect(codes.filter((c) => !troubleshooting.includes(`**Exit ${c}`))).toEqual([]);
    const exitCodes = section("Exit codes");
    expect([...Object.values(ExitCode), "130, 143"].filter((c) => !exitCodes.includes(`\n| ${c} |`))).toEqual(
      [],
    );
  });
});
