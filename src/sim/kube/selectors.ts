/**
 * Label and field selectors as kube-apiserver parses and applies them (k8s.io/apimachinery labels and fields
 * packages). Pure functions: a parse error is a SelectorError whose message the server wraps in a 400.
 */

/** One label requirement. `!=` and `notin` also match objects without the label; `in`/`=` need it. */
export type LabelRequirement =
  | { readonly key: string; readonly op: "exists" | "!" }
  | { readonly key: string; readonly op: "in" | "notin"; readonly values: readonly string[] }
  | { readonly key: string; readonly op: "gt" | "lt"; readonly value: number };

export type LabelSelector = readonly LabelRequirement[];

export class SelectorError extends Error {
  override name = "SelectorError";
}

const labelNamePattern = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const dnsSubdomainPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is not a valid label key (a qualified name, optionally prefixed by a DNS subdomain), or undefined. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf("/");
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (prefix.length === 0 || prefix.length > 253 || !dnsSubdomainPattern.test(prefix)) {
      return "prefix part must be a lowercase RFC 1123 subdomain of at most 253 characters";
    }
  }
  if (name.length === 0 || name.length > 63 || !labelNamePattern.test(name)) {
    return (
      "name part must consist of at most 63 alphanumeric characters, '-', '_' or '.', and must start and " +
      "end with an alphanumeric character"
    );
  }
  return undefined;
}

/** Why `value` is not a valid label value (empty, or a name of at most 63 characters), or undefined. */
export function labelValueProblem(value: string): string | undefined {
  if (value === "") return undefined;
  if (value.length > 63 || !labelNamePattern.test(value)) {
    return (
      "a valid label must be an empty string or consist of at most 63 alphanumeric characters, '-', '_' or " +
      "'.', and must start and end with an alphanumeric character"
    );
  }
  return undefined;
}

type Token =
  | { kind: "id"; text: string }
  | { kind: "op"; text: "=" | "==" | "!=" | "!" | "(" | ")" | "," | ">" | "<" }
  | { kind: "end" };

const special = new Set(["=", "!", "(", ")", ",", ">", "<"]);

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i] as string;
    if (/\s/.test(c)) {
      i += 1;
    } else if (c === "=" && input[i + 1] === "=") {
      tokens.push({ kind: "op", text: "==" });
      i += 2;
    } else if (c === "!" && input[i + 1] === "=") {
      tokens.push({ kind: "op", text: "!=" });
      i += 2;
    } else if (special.has(c)) {
      tokens.push({ kind: "op", text: c as "=" });
      i += 1;
    } else {
      let j = i;
      while (j < input.length && !special.has(input[j] as string) && !/\s/.test(input[j] as string)) j += 1;
      tokens.push({ kind: "id", text: input.slice(i, j) });
      i = j;
    }
  }
  tokens.push({ kind: "end" });
  return tokens;
}

function describe(token: Token): string {
  return token.kind === "end" ? "end of string" : `'${token.text}'`;
}

/**
 * Parses a label selector: requirements separated by commas, each `key`, `!key`, `key=value`,
 * `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key>N` or `key<N`. The empty string
 * selects everything. Throws SelectorError.
 */
export function parseLabelSelector(input: string): LabelSelector {
  const tokens = tokenize(input);
  let at = 0;
  const peek = (): Token => tokens[at] as Token;
  const next = (): Token => tokens[at++] as Token;
  const fail = (message: string): never => {
    throw new SelectorError(`unable to parse requirement: ${message}`);
  };
  const checkKey = (key: string): string => {
    const problem = labelKeyProblem(key);
    if (problem !== undefined) fail(`invalid label key "${key}": ${problem}`);
    return key;
  };
  const checkValue = (value: string): string => {
    const problem = labelValueProblem(value);
    if (problem !== undefined) fail(`invalid label value: "${value}": ${problem}`);
    return value;
  };
  const requirements: LabelRequirement[] = [];
  if (peek().kind === "end") return requirements;
  for (;;) {
    const first = next();
    if (first.kind === "op" && first.text === "!") {
      const key = next();
      if (key.kind !== "id") fail(`found ${describe(key)}, expected: identifier after '!'`);
      requirements.push({ key: checkKey((key as { text: string }).text), op: "!" });
    } else if (first.kind === "id") {
      const key = checkKey(first.text);
      const op = peek();
      if (op.kind === "end" || (op.kind === "op" && op.text === ",")) {
        requirements.push({ key, op: "exists" });
      } else if (op.kind === "op" && (op.text === "=" || op.text === "==" || op.text === "!=")) {
        next();
        const value = peek();
        let text = "";
        if (value.kind === "id") {
          text = value.text;
          next();
        } else if (!(value.kind === "end" || (value.kind === "op" && value.text === ","))) {
          fail(`found ${describe(value)}, expected: identifier`);
        }
        requirements.push({ key, op: op.text === "!=" ? "notin" : "in", values: [checkValue(text)] });
      } else if (op.kind === "op" && (op.text === ">" || op.text === "<")) {
        next();
        const value = next();
        const number = value.kind === "id" ? Number(value.text) : Number.NaN;
        if (value.kind !== "id" || !/^-?\d+$/.test(value.text)) {
          fail(`for 'Gt', 'Lt' operators, the value must be an integer, found ${describe(value)}`);
        }
        requirements.push({ key, op: op.text === ">" ? "gt" : "lt", value: number });
      } else if (op.kind === "id" && (op.text === "in" || op.text === "notin")) {
        next();
        const open = next();
        if (!(open.kind === "op" && open.text === "(")) fail(`found ${describe(open)}, expected: '('`);
        const values: string[] = [];
        for (;;) {
          const value = peek();
          if (value.kind === "op" && value.text === ")") {
            next();
            break;
          }
          if (value.kind === "id") {
            values.push(checkValue(value.text));
            next();
          } else if (value.kind === "op" && value.text === ",") {
            // An empty value between commas: `in (a,,b)` or `in (,a)`.
            values.push("");
          } else {
            fail(`found ${describe(value)}, expected: ',', ')' or identifier`);
          }
          const sep = peek();
          if (sep.kind === "op" && sep.text === ",") {
            next();
            const after = peek();
            if (after.kind === "op" && after.text === ")") values.push("");
          } else if (!(sep.kind === "op" && sep.text === ")")) {
            fail(`found ${describe(sep)}, expected: ',' or ')'`);
          }
        }
        if (values.length === 0) fail("for 'in', 'notin' operators, values set can't be empty");
        requirements.push({ key, op: op.text, values });
      } else {
        fail(`found ${describe(op)}, expected: in, notin, =, ==, !=, gt, lt`);
      }
    } else {
      fail(`found ${describe(first)}, expected: !, identifier, or 'end of string'`);
    }
    const sep = next();
    if (sep.kind === "end") return requirements;
    if (!(sep.kind === "op" && sep.text === ","))
      fail(`found ${describe(sep)}, expected: ',' or 'end of string'`);
  }
}

/** Whether labels satisfy every requirement. */
export function matchesLabels(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  const own = labels ?? {};
  return selector.every((r) => {
    const has = Object.hasOwn(own, r.key);
    const value = own[r.key];
    switch (r.op) {
      case "exists":
        return has;
      case "!":
        return !has;
      case "in":
        return has && r.values.includes(value as string);
      case "notin":
        return !has || !r.values.includes(value as string);
      case "gt":
      case "lt": {
        if (!has || !/^-?\d+$/.test(value as string)) return false;
        const n = Number(value);
        return r.op === "gt" ? n > r.value : n < r.value;
      }
    }
    return false;
  });
}

/** One field requirement: `key=value` (or `==`) and `key!=value`. Fields have no set-based operators. */
export interface FieldRequirement {
  readonly key: string;
  readonly op: "=" | "!=";
  readonly value: string;
}

export type FieldSelector = readonly FieldRequirement[];

/** Splits on `sep` not preceded by a backslash escape. */
function splitUnescaped(input: string, sep: string): string[] {
  const parts: string[] = [];
  let current = "";
  for (let i = 0; i < input.length; i++) {
    const c = input[i] as string;
    if (c === "\\" && i + 1 < input.length) {
      current += c + (input[i + 1] as string);
      i += 1;
    } else if (c === sep) {
      parts.push(current);
      current = "";
    } else {
      current += c;
    }
  }
  parts.push(current);
  return parts;
}

function unescapeValue(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === "\\") {
      const n = text[i + 1];
      if (n === "\\" || n === "," || n === "=") {
        out += n;
        i += 1;
        continue;
      }
      throw new SelectorError(`invalid field selector: invalid escape sequence in ${JSON.stringify(text)}`);
    }
    out += c;
  }
  return out;
}

/**
 * Parses a field selector: terms separated by commas, each `key=value`, `key==value` or `key!=value`; a
 * backslash escapes `\`, `,` and `=` in values. The empty string selects everything. Throws SelectorError.
 */
export function parseFieldSelector(input: string): FieldSelector {
  if (input.trim() === "") return [];
  return splitUnescaped(input, ",").map((term) => {
    for (const [text, op] of [
      ["!=", "!="],
      ["==", "="],
      ["=", "="],
    ] as const) {
      // The operator is the first unescaped occurrence.
      let index = -1;
      for (let i = 0; i < term.length; i++) {
        if (term[i] === "\\") {
          i += 1;
          continue;
        }
        if (term.startsWith(text, i)) {
          index = i;
          break;
        }
      }
      if (index > 0) {
        return {
          key: term.slice(0, index).trim(),
          op,
          value: unescapeValue(term.slice(index + text.length)),
        };
      }
    }
    throw new SelectorError(`invalid selector: '${term}'; can't understand '${term}'`);
  });
}

/**
 * Whether the object's selectable fields satisfy every term; a field missing from `fields` is "". Check
 * the fields against what the resource offers first (unsupportedField): the API server refuses the others.
 */
export function matchesFields(selector: FieldSelector, fields: Readonly<Record<string, string>>): boolean {
  return selector.every((term) => {
    const value = fields[term.key] ?? "";
    return term.op === "=" ? value === term.value : value !== term.value;
  });
}

/** The first field the selector names that is not among `supported`, or undefined. */
export function unsupportedField(selector: FieldSelector, supported: readonly string[]): string | undefined {
  return selector.find((term) => !supported.includes(term.key))?.key;
}
