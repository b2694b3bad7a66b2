// zod/mini, not classic zod: it tree-shakes to ~20 KB where classic pulls ~580 KB into every start of `init`.
import * as z from "zod/mini";
import { ConfigError } from "../errors/config-error.js";
import { tryCanonical } from "../ip.js";
import { misspellingOf } from "./known-variables.js";
import { nearestName } from "./nearest-name.js";

/**
 * One configuration value: read from an environment variable (the Kubernetes way), overridden by a flag.
 * The table of settings is also the documentation: `--help` prints it, and a test checks docs/configuration.md lists
 * every variable.
 */
export interface Setting<T> {
  readonly env: string;
  readonly flag: string;
  /** Text default, parsed like a user value; undefined means required (or optional when `optional`). */
  readonly default: string | undefined;
  readonly optional?: boolean;
  /**
   * Whether an empty environment variable is a value of its own (e.g. "no file"). Otherwise an empty
   * variable counts as unset, as Kubernetes manifests often leave one empty.
   */
  readonly emptyIsValue?: boolean;
  readonly unit?: string;
  readonly doc: string;
  readonly schema: z.ZodMiniType<T, string>;
}

/** `s` as it is: the compiler infers the setting's value type from its schema. */
export function setting<T>(s: Setting<T>): Setting<T> {
  return s;
}

export type SettingTable = Record<string, Setting<unknown>>;
export type SettingValues<S extends SettingTable> = {
  [K in keyof S]: S[K] extends Setting<infer T> ? (S[K]["optional"] extends true ? T | undefined : T) : never;
};

/**
 * Splits `--name value` and `--name=value`. A flag with no value (last, or followed by another flag) maps
 * to undefined: loadSettings takes it as "true" for a boolean (`--json`) and refuses it for any other
 * setting, where it is a value forgotten, not the text "true".
 */
export function parseFlags(argv: readonly string[]): Map<string, string | undefined> {
  const flags = new Map<string, string | undefined>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (!arg.startsWith("--")) {
      throw new ConfigError(
        "argument",
        arg,
        "unexpected argument; flags take the form --name value (see --help)",
      );
    }
    const eq = arg.indexOf("=");
    if (eq > 0) {
      flags.set(arg.slice(0, eq), arg.slice(eq + 1));
      continue;
    }
    const next = argv[i + 1];
    if (next === undefined || next.startsWith("--")) {
      flags.set(arg, undefined);
    } else {
      flags.set(arg, next);
      i++;
    }
  }
  return flags;
}

/** Where a setting's text comes from: its flag, else its variable, else its default; named as the user wrote it. */
function sourceOf(
  setting: Setting<unknown>,
  flags: ReadonlyMap<string, string | undefined>,
  env: Readonly<Record<string, string | undefined>>,
): { name: string; raw: string | undefined } {
  const given = flags.has(setting.flag);
  // A bare flag reaches here only for a boolean (loadSettings refuses the others): it means true.
  const fromFlag = given ? (flags.get(setting.flag) ?? "true") : undefined;
  const fromEnv = env[setting.env];
  const raw =
    fromFlag ?? (fromEnv === "" && setting.emptyIsValue !== true ? undefined : fromEnv) ?? setting.default;
  return { name: given ? setting.flag : setting.env, raw };
}

/**
 * A ConfigError about one setting, for a rule across settings (checked after loadSettings): names the flag or
 * the variable the value came from, and the value as written.
 */
export function settingError<T>(
  setting: Setting<T>,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  problemAndFix: string,
): ConfigError {
  const { name, raw } = sourceOf(setting as Setting<unknown>, parseFlags(argv), env);
  return new ConfigError(name, raw, problemAndFix);
}

/**
 * A first backoff delay above the cap of every delay, refused: the cap would silently win. Throws a
 * ConfigError naming the base's flag or variable; `base` and `cap` are the two settings, `values` their
 * loaded values.
 */
export function checkBackoffRange(
  base: Setting<number>,
  cap: Setting<number>,
  values: { base: number; cap: number },
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): void {
  if (values.base <= values.cap) return;
  throw settingError(
    base,
    argv,
    env,
    `must be at most ${cap.env} (${values.cap} ms), the cap of every backoff delay; lower it, or raise ${cap.env}`,
  );
}

/** The fix for an unknown name: the nearest known one when there is one close enough, else where the list is. */
function unknownFlagFix(flag: string, table: SettingTable): string {
  const near = nearestName(
    flag,
    Object.values(table).map((s) => s.flag),
  );
  return near === undefined
    ? "unknown flag; run with --help for the list"
    : `unknown flag; did you mean ${near}? (--help lists them)`;
}

export function loadSettings<S extends SettingTable>(
  table: S,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): SettingValues<S> {
  const flags = parseFlags(argv);
  const byFlag = new Map(Object.values(table).map((s) => [s.flag, s]));
  for (const [flag, value] of flags) {
    const setting = byFlag.get(flag);
    if (setting === undefined) throw new ConfigError(flag, value, unknownFlagFix(flag, table));
    if (value === undefined && !BOOLEANS.has(setting.schema)) {
      const example = setting.default === undefined || setting.default === "" ? "VALUE" : setting.default;
      throw new ConfigError(
        flag,
        undefined,
        `given without a value; write ${flag}=${example} or ${flag} ${example} (the value follows the flag; see --help)`,
      );
    }
  }
  const out: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(table)) {
    const { name, raw } = sourceOf(setting, flags, env);
    if (raw === undefined) {
      if (setting.optional === true) {
        out[key] = undefined;
        continue;
      }
      const misspelt = misspellingOf(setting.env, env);
      const hint = misspelt === undefined ? "" : ` (${misspelt} is set: did you mean ${setting.env}?)`;
      throw new ConfigError(setting.env, undefined, `required${hint}: ${setting.doc}`);
    }
    const parsed = setting.schema.safeParse(raw);
    if (!parsed.success) {
      throw new ConfigError(name, raw, parsed.error.issues[0]?.message ?? "invalid value");
    }
    out[key] = parsed.data;
  }
  return out as SettingValues<S>;
}

/** The range a whole-number setting accepts (`field.milliseconds`, `field.integer`); undefined for others. */
export function settingRange(setting: Setting<unknown>): { min: number; max: number } | undefined {
  return RANGES.get(setting.schema);
}

/** "50 to 60000 ms", for help and docs/configuration.md; undefined for a setting without a range. */
export function rangeText(setting: Setting<unknown>): string | undefined {
  const range = settingRange(setting);
  if (range === undefined) return undefined;
  return `${range.min} to ${range.max}${setting.unit === undefined ? "" : ` ${setting.unit}`}`;
}

/** Help lines are wrapped at this width (a terminal's 100 columns, as the usage text). */
const HELP_WIDTH = 100;

/** `text` as lines of at most `width` characters, each starting with `indent`; a longer word stays whole. */
export function wrapText(text: string, indent: string, width = HELP_WIDTH): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    if (line !== "" && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  if (line !== "") lines.push(indent + line);
  return lines.join("\n");
}

/** The `--help` table: flag, variable, default, range and meaning of every setting, wrapped. */
export function describeSettings(table: SettingTable): string {
  return Object.values(table)
    .map((s) => {
      const dflt =
        s.default === undefined ? (s.optional === true ? "(unset)" : "(required)") : s.default || '""';
      const range = rangeText(s);
      const unit = range !== undefined ? `, ${range}` : s.unit === undefined ? "" : `, in ${s.unit}`;
      const details = `(${s.env}, default ${dflt}${unit})`;
      const oneLine = `  ${s.flag}  ${details}`;
      const head = oneLine.length <= HELP_WIDTH ? oneLine : `  ${s.flag}\n${wrapText(details, "      ")}`;
      return `${head}\n${wrapText(s.doc, "      ")}`;
    })
    .join("\n");
}

/**
 * A command's `--help`: its usage line, what it does (one paragraph, wrapped here), and its flags. Every
 * line fits HELP_WIDTH columns, except a word longer than that.
 */
export function commandHelp(usage: string, about: string, table: SettingTable): string {
  return `${usage}\n\n${wrapText(about, "")}\n\nflags (each also read from its environment variable):\n${describeSettings(table)}\n`;
}

/** Schemas of field.milliseconds and field.integer, with the range each accepts. */
const RANGES = new WeakMap<object, { min: number; max: number }>();
/** Schemas of field.boolean: their flags may stand alone, meaning true. */
const BOOLEANS = new WeakSet<object>();

/**
 * The items of a comma-separated list, trimmed, empty ones dropped; or, for a text of separators and
 * whitespace only (`" , "`), the sentence refusing it. An empty text is an empty list (the setting's
 * "none"); one of separators only is a list whose items were lost (a template that filled nothing in), and
 * taking it as empty would change what is managed. `example`: a list of the right kind; `emptyMeans`: what
 * the empty value does.
 */
function listItems(text: string, example: string, emptyMeans: string): string[] | { problem: string } {
  const items = text
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x.length > 0);
  if (items.length === 0 && text !== "") {
    return {
      problem: `holds only separators and no item; write the items, e.g. ${example}, or leave it empty (${emptyMeans})`,
    };
  }
  return items;
}

/** One item of a list, parsed; or the sentence refusing it, with the fix. */
export type ListItem<T> = { readonly value: T } | { readonly problem: string };

/**
 * How `field.list` reads a comma-separated list. An optional list says what its empty value does
 * (`emptyMeans`); a required one gives the sentence for a list with no item (`required`), separators only
 * included.
 */
export type ListOptions<T> = ({ readonly emptyMeans: string } | { readonly required: string }) & {
  /** A list of the right kind, for messages, e.g. `net1,net2 or net*`. */
  readonly example: string;
  /** One item (trimmed, not empty) parsed; `before` holds the items of the list parsed before it. */
  readonly item: (item: string, before: readonly T[]) => ListItem<T>;
};

/** The schema of a comma-separated list, refused at its first bad item; see ListOptions. */
function listSchema<T>(options: ListOptions<T>) {
  return z.pipe(
    z.string(),
    z.transform((text, ctx) => {
      const fail = (message: string): typeof z.NEVER => {
        ctx.issues.push({ input: text, code: "custom", message });
        return z.NEVER;
      };
      const emptyMeans = "emptyMeans" in options ? options.emptyMeans : "";
      const items = listItems(text, options.example, emptyMeans);
      if ("required" in options && (!Array.isArray(items) || items.length === 0)) {
        return fail(options.required);
      }
      if (!Array.isArray(items)) return fail(items.problem);
      const out: T[] = [];
      for (const item of items) {
        const parsed = options.item(item, out);
        if ("problem" in parsed) return fail(parsed.problem);
        out.push(parsed.value);
      }
      return out;
    }),
  );
}

// Field schemas, with messages that say what is expected.
function wholeNumber(min: number, max: number, unit: string) {
  const suffix = unit === "" ? "" : ` ${unit}`;
  const form =
    unit === ""
      ? `a whole number from ${min} to ${max}`
      : `a whole number of ${unit === "ms" ? "milliseconds" : unit} from ${min} to ${max}`;
  return z.pipe(
    z.string().check(z.regex(/^\d+$/, `expected ${form}`)),
    z.pipe(
      z.transform(Number),
      z
        .number()
        .check(
          z.minimum(min, `must be at least ${min}${suffix}`),
          z.maximum(max, `must be at most ${max}${suffix}`),
        ),
    ),
  );
}

function ranged<T extends object>(schema: T, min: number, max: number): T {
  RANGES.set(schema, { min, max });
  return schema;
}

function booleanSchema<T extends object>(schema: T): T {
  BOOLEANS.add(schema);
  return schema;
}

export const field = {
  milliseconds: (min: number, max: number) => ranged(wholeNumber(min, max, "ms"), min, max),
  integer: (min: number, max: number) => ranged(wholeNumber(min, max, ""), min, max),
  boolean: () =>
    booleanSchema(
      z.pipe(
        z.string(),
        z.transform((s, ctx) => {
          if (s === "true") return true;
          if (s === "false") return false;
          ctx.issues.push({ code: "custom", message: "expected true or false", input: s });
          return z.NEVER;
        }),
      ),
    ),
  /** `example`: a URL of the kind the setting wants, for the message (an EC2 endpoint is not IMDS's). */
  url: (example: string) =>
    z
      .string()
      .check(
        z.refine(
          (s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol),
          `expected an http:// or https:// URL, e.g. ${example}`,
        ),
      ),
  enumOf: <const T extends readonly [string, ...string[]]>(values: T) =>
    z.enum(values, { error: `expected one of: ${values.join(", ")}` }),
  text: () => z.string().check(z.minLength(1, "must not be empty")),
  /** A comma-separated list, each item parsed by `options.item`: the one list parser of every command. */
  list: <T>(options: ListOptions<T>) => listSchema(options),
  /** An IP address literal in the strict form of ip.ts (no host name: nothing is looked up). */
  ipAddress: () =>
    z
      .string()
      .check(
        z.refine(
          (s) => tryCanonical(s) !== undefined,
          "expected an IP address, e.g. 0.0.0.0 (every IPv4 address), :: (every address) or one of the pod's addresses",
        ),
      ),
};
