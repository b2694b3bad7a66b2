// zod/mini, not classic zod: it tree-shakes to ~20 KB where classic pulls ~580 KB into every start of `init`.
import * as z from "zod/mini";
import { ConfigError } from "../errors/config-error.js";
import { tryCanonical } from "../ip.js";

/**
 * One configuration value: read from an environment variable (the Kubernetes way), overridden by a flag.
 * The table of settings is also the documentation: `--help` prints it, and a test checks README.md lists
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

export type SettingTable = Record<string, Setting<unknown>>;
export type SettingValues<S extends SettingTable> = {
  [K in keyof S]: S[K] extends Setting<infer T> ? (S[K]["optional"] extends true ? T | undefined : T) : never;
};

/** Splits `--name value` and `--name=value`; a bare `--name` followed by another flag means "true". */
export function parseFlags(argv: readonly string[]): Map<string, string> {
  const flags = new Map<string, string>();
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
      flags.set(arg, "true");
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
  flags: ReadonlyMap<string, string>,
  env: Readonly<Record<string, string | undefined>>,
): { name: string; raw: string | undefined } {
  const fromFlag = flags.get(setting.flag);
  const fromEnv = env[setting.env];
  const raw =
    fromFlag ?? (fromEnv === "" && setting.emptyIsValue !== true ? undefined : fromEnv) ?? setting.default;
  return { name: fromFlag === undefined ? setting.env : setting.flag, raw };
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

export function loadSettings<S extends SettingTable>(
  table: S,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): SettingValues<S> {
  const flags = parseFlags(argv);
  const known = new Set(Object.values(table).map((s) => s.flag));
  for (const flag of flags.keys()) {
    if (!known.has(flag))
      throw new ConfigError(flag, flags.get(flag), "unknown flag; run with --help for the list");
  }
  const out: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(table)) {
    const { name, raw } = sourceOf(setting, flags, env);
    if (raw === undefined) {
      if (setting.optional === true) {
        out[key] = undefined;
        continue;
      }
      throw new ConfigError(setting.env, undefined, `required: ${setting.doc}`);
    }
    const parsed = setting.schema.safeParse(raw);
    if (!parsed.success) {
      throw new ConfigError(name, raw, parsed.error.issues[0]?.message ?? "invalid value");
    }
    out[key] = parsed.data;
  }
  return out as SettingValues<S>;
}

/** The `--help` table: flag, variable, default and meaning of every setting. */
export function describeSettings(table: SettingTable): string {
  return Object.values(table)
    .map((s) => {
      const dflt =
        s.default === undefined ? (s.optional === true ? "(unset)" : "(required)") : s.default || '""';
      const unit = s.unit === undefined ? "" : ` [${s.unit}]`;
      return `  ${s.flag}  (${s.env}, default ${dflt})${unit}\n      ${s.doc}`;
    })
    .join("\n");
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

export const field = {
  milliseconds: (min: number, max: number) => wholeNumber(min, max, "ms"),
  integer: (min: number, max: number) => wholeNumber(min, max, ""),
  boolean: () =>
    z.pipe(
      z.string(),
      z.transform((s, ctx) => {
        if (s === "true") return true;
        if (s === "false") return false;
        ctx.issues.push({ code: "custom", message: "expected true or false", input: s });
        return z.NEVER;
      }),
    ),
  url: () =>
    z
      .string()
      .check(
        z.refine(
          (s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol),
          "expected an http:// or https:// URL, e.g. http://169.254.169.254",
        ),
      ),
  enumOf: <const T extends readonly [string, ...string[]]>(values: T) =>
    z.enum(values, { error: `expected one of: ${values.join(", ")}` }),
  text: () => z.string().check(z.minLength(1, "must not be empty")),
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
