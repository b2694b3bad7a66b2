import { Ec2ApiError } from "../errors/ec2-api-error.js";

/** One `Filter.N` of a Describe call. */
export interface QueryFilter {
  readonly name: string;
  readonly values: readonly string[];
}

/**
 * The flattened form parameters of one EC2 Query request, with EC2's list conventions:
 * `Name.1`, `Name.2`, ... and `Filter.N.Name` / `Filter.N.Value.M`.
 */
export class QueryParams {
  readonly #values: ReadonlyMap<string, string>;

  constructor(values: ReadonlyMap<string, string>) {
    this.#values = values;
  }

  static fromForm(body: string): QueryParams {
    return new QueryParams(new Map(new URLSearchParams(body)));
  }

  /** Every parameter, as logged in GET /calls. */
  toRecord(): Record<string, string> {
    return Object.fromEntries(this.#values);
  }

  has(name: string): boolean {
    return this.#values.has(name);
  }

  get(name: string): string | undefined {
    return this.#values.get(name);
  }

  require(name: string): string {
    const value = this.#values.get(name);
    if (value === undefined || value === "") {
      throw new Ec2ApiError("MissingParameter", `The request must contain the parameter ${name}`);
    }
    return value;
  }

  /** `prefix.1`, `prefix.2`, ... in index order (the indexes need not be contiguous). */
  list(prefix: string): string[] {
    return this.#indexed(prefix).map(([, key]) => this.#values.get(key) as string);
  }

  /** The member `member` of each structure of a list: `prefix.N.member`, in index order. */
  members(prefix: string, member: string): string[] {
    return this.#indexed(prefix, `.${member}`).map(([, key]) => this.#values.get(key) as string);
  }

  /** True only for the literal `true` (the SDKs send `true`/`false`). */
  bool(name: string): boolean {
    return this.#values.get(name)?.toLowerCase() === "true";
  }

  /** An integer parameter within [min, max], or undefined when absent. */
  int(name: string, min: number, max: number): number | undefined {
    const text = this.#values.get(name);
    if (text === undefined) return undefined;
    const value = Number(text);
    if (!/^-?\d+$/.test(text) || value < min || value > max) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        `Value (${text}) for parameter ${name} is invalid. Expected an integer from ${min} to ${max}.`,
      );
    }
    return value;
  }

  filters(): QueryFilter[] {
    return this.#indexed("Filter", ".Name").map(([n, key]) => ({
      name: this.#values.get(key) as string,
      values: this.list(`Filter.${n}.Value`),
    }));
  }

  /** [index, key] pairs of `prefix.N` + suffix, sorted by N. */
  #indexed(prefix: string, suffix = ""): [number, string][] {
    const pattern = new RegExp(`^${prefix.replace(/\./g, "\\.")}\\.(\\d+)${suffix.replace(/\./g, "\\.")}$`);
    const found: [number, string][] = [];
    for (const key of this.#values.keys()) {
      const match = pattern.exec(key);
      if (match !== null) found.push([Number(match[1]), key]);
    }
    return found.sort((a, b) => a[0] - b[0]);
  }
}
