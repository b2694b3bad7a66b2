/**
 * The configuration reference, docs/configuration.md, rendered from the settings tables the commands parse with
 * (the same tables `--help` prints), so the two cannot drift apart. Each table sits between two marker
 * comments, `<!-- config:NAME:start -->` and `<!-- config:NAME:end -->`; everything outside them is prose
 * and left alone. `npm run docs:config` rewrites the blocks (scripts/config-reference.mjs runs this module);
 * test/readme-config.test.ts fails when the page and the tables disagree.
 */
import { doctorSettings } from "../src/doctor/settings.js";
import { podSettings } from "../src/eni/process/config.js";
import { rangeText, type Setting, type SettingTable } from "../src/eni/process/settings.js";
import { initSettings } from "../src/init/settings.js";
import { linksSettings } from "../src/ipam-whereabouts-bridge/links/links-settings.js";
import { bridgeSettings } from "../src/ipam-whereabouts-bridge/settings.js";
import { sidecarSettings } from "../src/sidecar/settings.js";

/** The command that regenerates the blocks; error messages name it. */
export const REGENERATE_COMMAND = "npm run docs:config";

/** The page that holds every block, relative to the repository root. */
export const CONFIG_PAGE = "docs/configuration.md";

export interface ConfigBlock {
  /** The marker name: `<!-- config:${name}:start -->`. */
  readonly name: string;
  /** Where the settings are defined, named in the block's comment. */
  readonly source: string;
  readonly settings: readonly Setting<unknown>[];
  /** Settings shared with other commands, listed by variable after the table; empty: no such line. */
  readonly alsoReads: readonly Setting<unknown>[];
  /** Who else reads them, for that line; default: `init` and the sidecar. */
  readonly alsoReadsAs?: string;
}

/** The settings of `table` that are not the very objects of `bases` (a redefined one counts as its own). */
function ownSettings(table: SettingTable, ...bases: SettingTable[]): Setting<unknown>[] {
  const inherited = new Set(bases.flatMap((b) => Object.values(b)));
  return Object.values(table).filter((s) => !inherited.has(s));
}

function sharedSettings(table: SettingTable, ...bases: SettingTable[]): Setting<unknown>[] {
  const inherited = new Set(bases.flatMap((b) => Object.values(b)));
  return Object.values(table).filter((s) => inherited.has(s));
}

/**
 * The links agent's table repeats two of the bridge's settings (its room may not import the bridge's table):
 * a setting counts as shared when a base has one with its variable.
 */
function sharedByVariable(table: SettingTable, own: boolean, ...bases: SettingTable[]): Setting<unknown>[] {
  const inherited = new Set(bases.flatMap((b) => Object.values(b).map((s) => s.env)));
  return Object.values(table).filter((s) => inherited.has(s.env) !== own);
}

/** Every block the page carries, in the order of the page. */
export function configBlocks(): readonly ConfigBlock[] {
  return [
    {
      name: "pod",
      source: "src/eni/process/config.ts podSettings",
      settings: Object.values(podSettings),
      alsoReads: [],
    },
    {
      name: "init",
      source: "src/init/settings.ts initSettings",
      settings: ownSettings(initSettings, podSettings),
      alsoReads: [],
    },
    {
      name: "sidecar",
      source: "src/sidecar/settings.ts sidecarSettings",
      settings: ownSettings(sidecarSettings, podSettings),
      alsoReads: [],
    },
    {
      name: "doctor",
      source: "src/doctor/settings.ts doctorSettings",
      settings: ownSettings(doctorSettings, podSettings, sidecarSettings),
      alsoReads: [],
    },
    {
      name: "bridge",
      source: "src/ipam-whereabouts-bridge/settings.ts bridgeSettings",
      settings: ownSettings(bridgeSettings, podSettings, sidecarSettings),
      alsoReads: sharedSettings(bridgeSettings, podSettings, sidecarSettings),
    },
    {
      name: "links",
      source: "src/ipam-whereabouts-bridge/links/links-settings.ts linksSettings",
      settings: sharedByVariable(linksSettings, true, podSettings, bridgeSettings),
      alsoReads: sharedByVariable(linksSettings, false, podSettings, bridgeSettings),
      alsoReadsAs: "the bridge and `init` read them",
    },
  ];
}

function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}

function defaultCell(s: Setting<unknown>): string {
  if (s.default === undefined) return s.optional === true ? "unset" : "required";
  if (s.default === "") return "empty";
  return `\`${s.default}\``;
}

/** The Markdown of one block, without its markers. */
export function renderBlock(block: ConfigBlock): string {
  const lines = [
    `<!-- generated from ${block.source} by ${REGENERATE_COMMAND}: edit the settings, not this table -->`,
    "",
    "| variable | flag | default | range | meaning |",
    "| --- | --- | --- | --- | --- |",
    ...block.settings.map(
      (s) =>
        `| \`${s.env}\` | \`${s.flag}\` | ${defaultCell(s)} | ${rangeText(s) ?? s.unit ?? ""} | ${cell(s.doc)} |`,
    ),
  ];
  if (block.alsoReads.length > 0) {
    lines.push(
      "",
      `Also read, as ${block.alsoReadsAs ?? "`init` and the sidecar read them"}: ${block.alsoReads.map((s) => `\`${s.env}\``).join(", ")}.`,
    );
  }
  return lines.join("\n");
}

export function startMarker(name: string): string {
  return `<!-- config:${name}:start -->`;
}

export function endMarker(name: string): string {
  return `<!-- config:${name}:end -->`;
}

/** Where a block's content lies in `readme`, between its markers (exclusive). */
function blockRange(readme: string, name: string): { from: number; to: number } {
  const start = readme.indexOf(startMarker(name));
  const end = readme.indexOf(endMarker(name));
  if (start < 0 || end < 0 || end < start) {
    throw new Error(
      `${CONFIG_PAGE} lacks the markers ${startMarker(name)} and ${endMarker(name)} (in this order) around the ${name} settings table; add them where the table belongs, then run ${REGENERATE_COMMAND}`,
    );
  }
  return { from: start + startMarker(name).length, to: end };
}

/** The content of a block in `readme`, trimmed of the blank lines around it. */
export function readBlock(readme: string, name: string): string {
  const { from, to } = blockRange(readme, name);
  return readme.slice(from, to).trim();
}

/** `readme` with every block rendered afresh. */
export function updateReadme(readme: string, blocks: readonly ConfigBlock[] = configBlocks()): string {
  let out = readme;
  for (const block of blocks) {
    const { from, to } = blockRange(out, block.name);
    out = `${out.slice(0, from)}\n${renderBlock(block)}\n${out.slice(to)}`;
  }
  return out;
}

/** The names of the blocks whose content in `readme` differs from the settings. */
export function staleBlocks(readme: string, blocks: readonly ConfigBlock[] = configBlocks()): string[] {
  return blocks.filter((b) => readBlock(readme, b.name) !== renderBlock(b)).map((b) => b.name);
}
