import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { QueryParams } from "./query-params.js";
import { leaf } from "./xml.js";

export interface Page<T> {
  readonly items: readonly T[];
  /** XML `<nextToken>` element, or "" on the last page. */
  readonly nextTokenXml: string;
}

/**
 * EC2 paging: `MaxResults` (5 to 1000) and an opaque `NextToken`. The token encodes the action and the
 * offset, so a token from another call is refused instead of silently skipping items.
 */
export function paginate<T>(action: string, items: readonly T[], params: QueryParams): Page<T> {
  const maxResults = params.int("MaxResults", 5, 1000);
  const token = params.get("NextToken");
  let offset = 0;
  if (token !== undefined && token !== "") {
    const decoded = Buffer.from(token, "base64url").toString("utf8");
    const match = /^(\w+):(\d+)$/.exec(decoded);
    if (match === null || match[1] !== action) {
      throw new Ec2ApiError("InvalidPaginationToken", `The pagination token '${token}' is invalid.`);
    }
    offset = Number(match[2]);
  }
  if (maxResults === undefined) return { items: items.slice(offset), nextTokenXml: "" };
  const end = offset + maxResults;
  const next = end < items.length ? Buffer.from(`${action}:${end}`, "utf8").toString("base64url") : undefined;
  return { items: items.slice(offset, end), nextTokenXml: leaf("nextToken", next) };
}
