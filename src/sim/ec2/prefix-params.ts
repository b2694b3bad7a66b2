import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { type Cidr, type Family, parseCidr } from "../ip-math.js";
import { PREFIX_LENGTH, type PrefixRequest } from "./model/prefixes.js";

/** Canonical, de-duplicated prefixes of one family and EC2's length; a malformed one fails the request. */
export function canonicalPrefixes(values: readonly string[], family: Family, parameter: string): Cidr[] {
  const out: Cidr[] = [];
  for (const value of values) {
    const parsed = parseCidr(value);
    if (typeof parsed === "string" || parsed.family !== family) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        `Invalid value '${value}' for ${parameter}: ${typeof parsed === "string" ? parsed : `not an IPv${family} prefix`}`,
      );
    }
    if (parsed.prefix !== PREFIX_LENGTH[family]) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        `Invalid value '${value}' for ${parameter}: an IPv${family} prefix must be a /${PREFIX_LENGTH[family]}`,
      );
    }
    if (!out.some((c) => c.text === parsed.text)) out.push(parsed);
  }
  return out;
}

/** Reads `NAME.N` or `NAMECount` (never both) as a prefix request, or undefined when neither is given. */
export function prefixRequestOf(
  named: readonly string[],
  countText: string | undefined,
  count: () => number | undefined,
  family: Family,
  namedParam: string,
  countParam: string,
): PrefixRequest | undefined {
  if (named.length > 0 && countText !== undefined) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      `The parameters ${namedParam} and ${countParam} cannot be used together`,
    );
  }
  if (named.length > 0) return { named: canonicalPrefixes(named, family, namedParam) };
  if (countText !== undefined) return { count: count() ?? 0 };
  return undefined;
}
