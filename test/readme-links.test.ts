import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/** GitHub's anchors for the headings of a Markdown text (code blocks skipped; a repeated one gets -1, -2, ...). */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let inCode = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) inCode = !inCode;
    const heading = inCode ? null : /^#{1,6} (.+)$/.exec(line);
    if (heading === null) continue;
    const base = (heading[1] ?? "")
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, "")
      .replaceAll(" ", "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe("README.md's links within the page", () => {
  it("computes GitHub's anchors", () => {
    expect([
      ...anchors("# A b\n## How `init` works\n```\n# not a heading\n```\n## A b\n## (X + Y)\n"),
    ]).toEqual(["a-b", "how-init-works", "a-b-1", "x--y"]);
  });

  it("point at headings that exist (the table of contents included)", () => {
    const readme = readFileSync("README.md", "utf8");
    const known = anchors(readme);
    const links = [...readme.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1] ?? "");
    expect(links.length).toBeGreaterThan(20);
    expect(links.filter((l) => !known.has(l))).toEqual([]);
  });
});
