import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { canonicalAddress } from "../ip-math.js";
import type { QueryFilter } from "../query-params.js";

/** For one filter name, the values of an item it is compared with. */
export type FilterFields<T> = Readonly<Record<string, (item: T) => readonly string[]>>;

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

/**
 * Keeps the items matching every filter (AND between filters, OR between one filter's values).
 * `tag:KEY` and `tag-key` work on `tags(item)`. An unknown filter name is refused, as EC2 does.
 */
export function applyFilters<T>(
  items: readonly T[],
  filters: readonly QueryFilter[],
  fields: FilterFields<T>,
  tags?: (item: T) => Readonly<Record<string, string>>,
): T[] {
  const tests = filters.map((filter): ((item: T) => boolean) => {
    if (filter.values.length === 0) {
      throw new Ec2ApiError("InvalidParameterValue", `The filter '${filter.name}' has no values`);
    }
    const matchers = filter.values.map(matcher);
    const any = (values: readonly string[]): boolean => values.some((v) => matchers.some((m) => m(v)));
    if (tags !== undefined && filter.name.startsWith("tag:")) {
      const key = filter.name.slice(4);
      return (item) => {
        const value = tags(item)[key];
        return value !== undefined && any([value]);
      };
    }
    if (tags !== undefined && filter.name === "tag-key") return (item) => any(Object.keys(tags(item)));
    const field = fields[filter.name];
    if (field === undefined)
      throw new Ec2ApiError("InvalidParameterValue", `The filter '${filter.name}' is invalid`);
    return (item) => any(field(item));
  });
  return items.filter((item) => tests.every((test) => test(item)));
}
