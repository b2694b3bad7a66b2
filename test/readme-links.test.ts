import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
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

/** The Markdown links of a text, outside code blocks: `[label](target)`, target as written. */
function links(markdown: string): string[] {
  let inCode = false;
  return markdown.split("\n").flatMap((line) => {
    if (line.startsWith("```")) inCode = !inCode;
    return inCode ? [] : [...line.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? "");
  });
}

/** The front door, every page under docs/, and the READMEs of deploy/ and examples/. */
const PAGES = [
  "README.md",
  ...readdirSync("docs")
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
  "deploy/README.md",
  "examples/README.md",
];

/**
 * Where each link of `page` leads that does not exist: a heading missing in its page, or a file or folder
 * missing in the repository. Web links are not followed.
 */
function brokenLinks(page: string): string[] {
  const text = readFileSync(page, "utf8");
  return links(text).flatMap((target) => {
    if (/^[a-z]+:/.test(target)) return [];
    const [path = "", anchor] = target.split("#");
    const file = path === "" ? page : normalize(join(dirname(page), path));
    if (!existsSync(file)) return [`${target} (no file ${file})`];
    if (anchor === undefined) return [];
    if (statSync(file).isDirectory() || !file.endsWith(".md")) return [`${target} (an anchor into ${file})`];
    return anchors(readFileSync(file, "utf8")).has(anchor)
      ? []
      : [`${target} (no heading #${anchor} in ${file})`];
  });
}

describe("the docs' links: README.md, docs/, deploy/README.md, examples/README.md", () => {
  it("computes GitHub's anchors", () => {
    expect([
      ...anchors("# A b\n## How `init` works\n```\n# not a heading\n```\n## A b\n## (X + Y)\n"),
    ]).toEqual(["a-b", "how-init-works", "a-b-1", "x--y"]);
  });

  it("finds links outside code blocks only", () => {
    expect(links("[a](#x) and [b](docs/c.md#y)\n```\n[no](#z)\n```\n[web](https://example.org)\n")).toEqual([
      "#x",
      "docs/c.md#y",
      "https://example.org",
    ]);
  });

  it("reads every page under docs/ (the index among them)", () => {
    expect(PAGES).toContain("docs/README.md");
    expect(PAGES.length).toBeGreaterThan(10);
  });

  it.each(PAGES.map((p) => [p] as const))("%s: every link leads to a file and heading that exist", (page) => {
    expect(brokenLinks(page)).toEqual([]);
  });

  it("README.md links every page under docs/ or the index that does", () => {
    const readme = links(readFileSync("README.md", "utf8"));
    const index = links(readFileSync("docs/README.md", "utf8"));
    expect(readme).toContain("docs/README.md");
    const reached = new Set([
      ...readme.map((l) => l.split("#")[0]),
      ...index.map((l) => `docs/${l.split("#")[0]}`),
    ]);
    expect(PAGES.filter((p) => p.startsWith("docs/") && !reached.has(p))).toEqual([]);
  });
});
