/**
 * docs/prefix-mode.md's table of the reasons a network is left in per-address mode lists exactly the
 * reasons the bridge's prefix plan has (PrefixRefusalReason in src/ipam-whereabouts-bridge/prefixes/prefix-plan.ts):
 * none missing, none the code no longer has.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const code = readFileSync("src/ipam-whereabouts-bridge/prefixes/prefix-plan.ts", "utf8");
const page = readFileSync("docs/prefix-mode.md", "utf8");

function reasonsInCode(): string[] {
  const union = /export type PrefixRefusalReason =([^;]+);/.exec(code)?.[1] ?? "";
  return [...union.matchAll(/\| "([a-z-]+)"/g)].map((m) => m[1] ?? "").sort();
}

/** The first cells of the table whose header is `| reason | what | fix |`, backquoted names each. */
function reasonsInDocs(): string[] {
  const start = page.indexOf("| reason | what | fix |");
  expect(start, 'docs/prefix-mode.md has no table headed "| reason | what | fix |"').toBeGreaterThanOrEqual(
    0,
  );
  const rows = page.slice(start).split("\n").slice(2);
  const table = rows.slice(
    0,
    rows.findIndex((row) => !row.startsWith("|")),
  );
  return table
    .flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`([a-z-]+)`/g)].map((m) => m[1] ?? ""))
    .sort();
}

describe("docs/prefix-mode.md, the reasons the bridge leaves a network in per-address mode", () => {
  it("finds the reasons in the code (the scan itself works)", () => {
    expect(reasonsInCode()).toContain("slice-too-small");
    expect(reasonsInCode().length).toBeGreaterThanOrEqual(12);
  });

  it("lists every reason of PrefixRefusalReason once, and no other", () => {
    expect(reasonsInDocs()).toEqual(reasonsInCode());
  });
});
