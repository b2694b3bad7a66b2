import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { canonicalAddress } from "../ip-math.js";
import type { QueryFilter } from "./query-params.js";

/** For one filter name, the values of an item it is compared with. */
export type FilterFields<T> = Readonly<Record<string, (item: T) => readonly string[]>>;

/** What one Describe call knows about its filters. */
export interface FilterCatalogue<T> {
  /** Every name EC2 documents for the call (see documented-filters.ts); `tag:` stands for `tag:KEY`. */
  readonly documented: readonly string[];
  /** The documented names the simulator models. The others are answered UnsupportedOperation. */
  readonly fields: FilterFields<T>;
  /** The item's tags, for `tag:KEY` (when documented). */
  readonly tags?: (item: T) => Readonly<Record<string, string>>;
}

/** EC2 writes booleans as `true` and `false` in filter values, as in responses. */
export const flag = (value: boolean): string[] => [String(value)];

/** EC2 filter values accept `*` (any run) and `?` (one character). */
function matcher(pattern: string): (value: string) => boolean {
  if (!/[*?]/.test(pattern)) {
    // Addresses compare by canonical form, so 2001:DB8:0::1 finds 2001:db8::1.
    const wanted = canonicalAddress(pattern) ?? pattern;
    return (value) => value === wanted;
  }
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  const regex = new RegExp(`^${source}$`);
  return (value) => regex.test(value);
}

/** The answer to a documented filter the simulator does not model: never a silent empty result. */
export function unsupportedFilter(name: string): Ec2ApiError {
  return new Ec2ApiError(
    "UnsupportedOperation",
    `The filter '${name}' is documented by EC2 but not modelled by multus-ipmgr sim`,
  );
}

/**
 * Keeps the items matching every filter (AND between filters, OR between one filter's values). An unknown
 * filter name is refused as EC2 refuses it (InvalidParameterValue); a documented one the simulator does not
 * model is refused with UnsupportedOperation.
 */
export function applyFilters<T>(
  items: readonly T[],
  filters: readonly QueryFilter[],
  catalogue: FilterCatalogue<T>,
): T[] {
  const { documented, fields, tags } = catalogue;
  const tests = filters.map((filter): ((item: T) => boolean) => {
    if (filter.values.length === 0) {
      throw new Ec2ApiError("InvalidParameterValue", `The filter '${filter.name}' has no values`);
    }
    const matchers = filter.values.map(matcher);
    const any = (values: readonly string[]): boolean => values.some((v) => matchers.some((m) => m(v)));
    if (filter.name.startsWith("tag:") && filter.name.length > 4 && documented.includes("tag:")) {
      if (tags === undefined) throw unsupportedFilter(filter.name);
      const key = filter.name.slice(4);
      return (item) => {
        const value = tags(item)[key];
        return value !== undefined && any([value]);
      };
    }
    const field = Object.hasOwn(fields, filter.name) ? fields[filter.name] : undefined;
    if (field !== undefined) return (item) => any(field(item));
    if (documented.includes(filter.name) && filter.name !== "tag:") throw unsupportedFilter(filter.name);
    throw new Ec2ApiError("InvalidParameterValue", `The filter '${filter.name}' is invalid`);
  });
  return items.filter((item) => tests.every((test) => test(item)));
}
