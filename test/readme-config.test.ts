import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as z from "zod/mini";
import {
  CONFIG_PAGE,
  type ConfigBlock,
  configBlocks,
  endMarker,
  REGENERATE_COMMAND,
  readBlock,
  renderBlock,
  staleBlocks,
  startMarker,
  updateReadme,
} from "../scripts/config-reference.js";
import { field } from "../src/eni/process/settings.js";
import { bridgeSettings } from "../src/ipam-whereabouts-bridge/settings.js";
import { simUsage } from "../src/sim/cli-args.js";

const readme = readFileSync(CONFIG_PAGE, "utf8");

const sample: ConfigBlock = {
  name: "sample",
  source: "a test",
  settings: [
    {
      env: "A_MS",
      flag: "--a-ms",
      default: "5",
      unit: "ms",
      doc: "Either a | b.",
      schema: z.string(),
    },
    { env: "B", flag: "--b", default: undefined, doc: "Required.", schema: z.string() },
    { env: "C", flag: "--c", default: undefined, optional: true, doc: "Optional.", schema: z.string() },
    { env: "D", flag: "--d", default: "", doc: "Empty default.", schema: z.string() },
    {
      env: "E_MS",
      flag: "--e-ms",
      default: "7",
      unit: "ms",
      doc: "Ranged.",
      schema: field.milliseconds(5, 60),
    },
  ],
  alsoReads: [],
};

describe("docs/configuration.md's configuration reference, generated from the settings tables", () => {
  it("matches the settings of every command (otherwise run the command this test names)", () => {
    const stale = staleBlocks(readme);
    expect(
      stale,
      `${CONFIG_PAGE}'s configuration tables differ from the settings in src/ (blocks: ${stale.join(", ")}); run ${REGENERATE_COMMAND} and commit ${CONFIG_PAGE}`,
    ).toEqual([]);
  });

  it("has each block once, its start marker before its end marker", () => {
    for (const { name } of configBlocks()) {
      expect(readme.split(startMarker(name)).length, startMarker(name)).toBe(2);
      expect(readme.split(endMarker(name)).length, endMarker(name)).toBe(2);
      expect(readme.indexOf(startMarker(name))).toBeLessThan(readme.indexOf(endMarker(name)));
    }
  });

  it("renders variable, flag, default, range (or unit) and meaning, with the defaults spelt out and pipes escaped", () => {
    expect(renderBlock(sample).split("\n")).toEqual([
      `<!-- generated from a test by ${REGENERATE_COMMAND}: edit the settings, not this table -->`,
      "",
      "| variable | flag | default | range | meaning |",
      "| --- | --- | --- | --- | --- |",
      "| `A_MS` | `--a-ms` | `5` | ms | Either a \\| b. |",
      "| `B` | `--b` | required |  | Required. |",
      "| `C` | `--c` | unset |  | Optional. |",
      "| `D` | `--d` | empty |  | Empty default. |",
      "| `E_MS` | `--e-ms` | `7` | 5 to 60 ms | Ranged. |",
    ]);
  });

  it("rewrites only what lies between the markers, and a second run changes nothing", () => {
    const text = `# T\n\nprose before\n${startMarker("sample")}\nold table\n${endMarker("sample")}\nprose after\n`;
    const once = updateReadme(text, [sample]);
    expect(once.startsWith(`# T\n\nprose before\n${startMarker("sample")}\n<!-- generated`)).toBe(true);
    expect(once.endsWith(`|\n${endMarker("sample")}\nprose after\n`)).toBe(true);
    expect(readBlock(once, "sample")).toBe(renderBlock(sample));
    expect(updateReadme(once, [sample])).toBe(once);
    expect(staleBlocks(once, [sample])).toEqual([]);
    expect(staleBlocks(text, [sample])).toEqual(["sample"]);
  });

  it("names the missing markers and the command when a block has none", () => {
    expect(() => updateReadme("# no markers\n", [sample])).toThrow(
      `${CONFIG_PAGE} lacks the markers ${startMarker("sample")} and ${endMarker("sample")} (in this order) around the sample settings table; add them where the table belongs, then run ${REGENERATE_COMMAND}`,
    );
  });

  it("lists the bridge's own settings in its table and the shared ones after it, each once", () => {
    const block = configBlocks().find((b) => b.name === "bridge");
    const listed = [...(block?.settings ?? []), ...(block?.alsoReads ?? [])].map((s) => s.env).sort();
    expect(listed).toEqual(
      Object.values(bridgeSettings)
        .map((s) => s.env)
        .sort(),
    );
  });

  // The simulator parses its flags by hand (src/sim/cli-args.ts), not from a settings table: its table in
  // docs/sim.md stays hand-written, and this checks that it names every flag and variable `sim --help` prints.
  it("lists every flag and variable of multus-ipmgr sim", () => {
    const flags = [...simUsage.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1] ?? "");
    const variables = [...simUsage.matchAll(/\[(IPMGR_SIM_[A-Z_]+)\]/g)].map((m) => m[1] ?? "");
    expect(flags.length).toBeGreaterThan(5);
    expect(variables.length).toBeGreaterThan(5);
    const simPage = readFileSync("docs/sim.md", "utf8");
    const missing = [...flags, ...variables].filter((name) => !simPage.includes(`\`${name}`));
    expect(missing).toEqual([]);
  });
});
