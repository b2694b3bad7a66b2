/**
 * Go's strconv.Unquote for a double-quoted string, which is how the kubelet writes each line of a downward
 * API annotations file (`key=%q`). Go's %q is not JSON: it writes `\x7f` for DEL and other control bytes,
 * `\U0001f600` for runes above U+FFFF that are not printable, and `\xHH` for each byte of invalid UTF-8,
 * none of which JSON.parse takes. Pure: no I/O.
 */

/** The unquoted text, or why the input is not a Go double-quoted string. */
export type GoUnquoteResult =
  | { readonly ok: true; readonly value: string }
  | { readonly ok: false; readonly problem: string };

const SIMPLE_ESCAPES: Readonly<Record<string, number>> = {
  a: 0x07,
  b: 0x08,
  f: 0x0c,
  n: 0x0a,
  r: 0x0d,
  t: 0x09,
  v: 0x0b,
  "\\": 0x5c,
  '"': 0x22,
};

/** How many hex digits each of \x, \u and \U takes. */
const HEX_DIGITS: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };
const HEX = /^[0-9a-fA-F]+$/;

const utf8 = new TextEncoder();
// Not fatal: like Go, bytes from \x and octal escapes may form invalid UTF-8; JSON then sees U+FFFD for them.
const utf8Decoder = new TextDecoder("utf-8");

function fail(problem: string): GoUnquoteResult {
  return { ok: false, problem };
}

/** Go's utf8.ValidRune: a Unicode scalar value. */
function validRune(rune: number): boolean {
  return rune <= 0x10ffff && !(rune >= 0xd800 && rune <= 0xdfff);
}

/**
 * Unquotes `"..."` as Go's strconv.Unquote does: \a \b \f \n \r \t \v \\ \" \xHH \ooo \uHHHH \UHHHHHHHH;
 * \x and octal escapes are single bytes, \u and \U runes (no surrogates), and the bytes are decoded as
 * UTF-8. A raw newline, an unescaped quote before the end, or anything after the closing quote is refused.
 * `problem` names the character (counted from 0 in `quoted`) and what is wrong there.
 */
export function goUnquote(quoted: string): GoUnquoteResult {
  if (quoted.length < 2 || !quoted.startsWith('"')) return fail("it does not start with a double quote");
  const bytes: number[] = [];
  let i = 1;
  while (i < quoted.length) {
    const char = quoted[i] as string;
    if (char === '"') {
      if (i !== quoted.length - 1) {
        return fail(`text follows its closing quote at character ${i}`);
      }
      return { ok: true, value: utf8Decoder.decode(Uint8Array.from(bytes)) };
    }
    if (char === "\n") return fail(`it holds a raw newline at character ${i}`);
    if (char !== "\\") {
      const codePoint = quoted.codePointAt(i) as number;
      const text = String.fromCodePoint(codePoint);
      bytes.push(...utf8.encode(text));
      i += text.length;
      continue;
    }
    const kind = quoted[i + 1];
    if (kind === undefined) return fail(`it ends inside an escape at character ${i}`);
    const simple = SIMPLE_ESCAPES[kind];
    if (simple !== undefined) {
      bytes.push(simple);
      i += 2;
      continue;
    }
    const digits = HEX_DIGITS[kind];
    if (digits !== undefined) {
      const hex = quoted.slice(i + 2, i + 2 + digits);
      if (hex.length !== digits || !HEX.test(hex)) {
        return fail(`\\${kind} at character ${i} needs ${digits} hex digits`);
      }
      const value = Number.parseInt(hex, 16);
      if (kind === "x") {
        bytes.push(value);
      } else {
        if (!validRune(value)) return fail(`\\${kind}${hex} at character ${i} is not a Unicode character`);
        bytes.push(...utf8.encode(String.fromCodePoint(value)));
      }
      i += 2 + digits;
      continue;
    }
    if (kind >= "0" && kind <= "7") {
      const octal = quoted.slice(i + 1, i + 4);
      if (!/^[0-7]{3}$/.test(octal)) return fail(`the octal escape at character ${i} needs 3 digits 0-7`);
      const value = Number.parseInt(octal, 8);
      if (value > 0xff) return fail(`the octal escape \\${octal} at character ${i} is over \\377`);
      bytes.push(value);
      i += 4;
      continue;
    }
    return fail(`\\${kind} at character ${i} is not an escape Go knows`);
  }
  return fail("it has no closing quote");
}
