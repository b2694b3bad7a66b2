import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { goUnquote } from "../src/eni/go-unquote.js";

const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;
const CONTROL_ESCAPES: Readonly<Record<number, string>> = {
  7: "\\a",
  8: "\\b",
  12: "\\f",
  10: "\\n",
  13: "\\r",
  9: "\\t",
  11: "\\v",
};

const hex = (value: number, digits: number): string => value.toString(16).padStart(digits, "0");

/**
 * Go's strconv.Quote (what %q writes) over bytes: printable runes as they are, \" and \\, the seven
 * letter escapes, \xHH for other bytes under 0x20, DEL and each byte of invalid UTF-8, \uHHHH and
 * \UHHHHHHHH for runes that are not printable.
 */
function goQuote(bytes: Uint8Array): string {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let out = '"';
  let i = 0;
  while (i < bytes.length) {
    const first = bytes[i] as number;
    const width = first < 0x80 ? 1 : first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 0;
    let rune: string | undefined;
    if (width > 0 && i + width <= bytes.length) {
      try {
        rune = decoder.decode(bytes.subarray(i, i + width));
      } catch {
        rune = undefined; // invalid UTF-8 here: written as \x bytes below
      }
    }
    if (rune === undefined || [...rune].length !== 1) {
      out += `\\x${hex(first, 2)}`;
      i += 1;
      continue;
    }
    const codePoint = rune.codePointAt(0) as number;
    if (rune === '"' || rune === "\\") out += `\\${rune}`;
    else if (PRINTABLE.test(rune)) out += rune;
    else if (CONTROL_ESCAPES[codePoint] !== undefined) out += CONTROL_ESCAPES[codePoint];
    else if (codePoint < 0x20 || codePoint === 0x7f) out += `\\x${hex(codePoint, 2)}`;
    else if (codePoint < 0x10000) out += `\\u${hex(codePoint, 4)}`;
    else out += `\\U${hex(codePoint, 8)}`;
    i += width;
  }
  return `${out}"`;
}

const value = (quoted: string): string => {
  const result = goUnquote(quoted);
  if (!result.ok) throw new Error(`expected ${quoted} to unquote, got: ${result.problem}`);
  return result.value;
};

const problem = (quoted: string): string => {
  const result = goUnquote(quoted);
  if (result.ok) throw new Error(`expected ${quoted} to be refused, got ${JSON.stringify(result.value)}`);
  return result.problem;
};

describe("goUnquote (strconv.Unquote for double-quoted strings)", () => {
  it.each([
    ["an empty string", '""', ""],
    ["plain text", '"net1"', "net1"],
    ["printable UTF-8 as it is", '"café 😀"', "café 😀"],
    ["\\a \\b \\f \\n \\r \\t \\v", '"\\a\\b\\f\\n\\r\\t\\v"', "\x07\b\f\n\r\t\v"],
    ['\\\\ and \\"', '"\\\\\\""', '\\"'],
    ["DEL as \\x7f, as %q writes it", '"a\\x7fb"', "a\x7fb"],
    ["\\x with upper-case hex", '"\\x7F"', "\x7f"],
    ["\\u", '"\\u00e9\\u200b"', "é\u200b"],
    ["a rune above U+FFFF as \\U0001xxxx", '"\\U000e0001\\U0001F600"', "\u{e0001}😀"],
    ["\\x bytes that together are UTF-8", '"\\xc3\\xa9"', "é"],
    ["a lone \\x byte as U+FFFD", '"\\xff"', "\ufffd"],
    ["octal \\ooo bytes", '"\\101\\000\\377"', "A\0\ufffd"],
    ["a JSON document quoted by %q", '"[{\\"name\\":\\"a\\x7f\\"}]"', '[{"name":"a\x7f"}]'],
  ])("unquotes %s", (_what, quoted, expected) => {
    expect(value(quoted)).toBe(expected);
  });

  it.each([
    ["no quotes", "net1", "it does not start with a double quote"],
    ["a lone quote", '"', "it does not start with a double quote"],
    ["single quotes", "'a'", "it does not start with a double quote"],
    ["no closing quote", '"abc', "it has no closing quote"],
    ["an escaped closing quote", '"abc\\"', "it has no closing quote"],
    ["an escape cut short", '"abc\\', "it ends inside an escape at character 4"],
    ["text after the closing quote", '"a"b', "text follows its closing quote at character 2"],
    ["a quote inside", '"a"b"', "text follows its closing quote at character 2"],
    ["a raw newline", '"a\nb"', "it holds a raw newline at character 2"],
    ["an unknown escape", '"a\\qb"', "\\q at character 2 is not an escape Go knows"],
    ["\\' (single-quoted strings only)", '"\\\'"', "\\' at character 1 is not an escape Go knows"],
    ["\\x with one digit", '"\\x7"', "\\x at character 1 needs 2 hex digits"],
    ["\\x with a non-hex digit", '"\\x7g"', "\\x at character 1 needs 2 hex digits"],
    ["\\u with three digits", '"\\u00e"', "\\u at character 1 needs 4 hex digits"],
    ["\\U with seven digits", '"\\U0001F60"', "\\U at character 1 needs 8 hex digits"],
    ["a surrogate in \\u", '"\\ud800"', "\\ud800 at character 1 is not a Unicode character"],
    ["\\U above U+10FFFF", '"\\U00110000"', "\\U00110000 at character 1 is not a Unicode character"],
    ["a short octal escape", '"\\12"', "the octal escape at character 1 needs 3 digits 0-7"],
    ["an 8 in an octal escape", '"\\128"', "the octal escape at character 1 needs 3 digits 0-7"],
    ["an octal escape over a byte", '"\\400"', "the octal escape \\400 at character 1 is over \\377"],
  ])("refuses %s, saying where", (_what, quoted, expected) => {
    expect(problem(quoted)).toBe(expected);
  });

  it("reads back what Go's %q writes, for any bytes (invalid UTF-8 read as U+FFFD, as Go's JSON does)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        expect(value(goQuote(bytes))).toBe(new TextDecoder().decode(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it("reads back what Go's %q writes, for any text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 30 }), (text) => {
        expect(value(goQuote(new TextEncoder().encode(text)))).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });
});
