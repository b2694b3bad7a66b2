import { Ec2ApiError } from "../errors/ec2-api-error.js";
import type { QueryParams } from "./query-params.js";

/** Tags of `TagSpecification.N` whose ResourceType is `resourceType`; any other type is refused. */
export function tagsFromSpecifications(params: QueryParams, resourceType: string): Record<string, string> {
  const tags: Record<string, string> = {};
  for (let n = 1; params.has(`TagSpecification.${n}.ResourceType`); n++) {
    const type = params.get(`TagSpecification.${n}.ResourceType`);
    if (type !== resourceType) {
      throw new Ec2ApiError(
        "InvalidParameterValue",
        `'${type}' is not a valid taggable resource type for this operation (expected ${resourceType}).`,
      );
    }
    for (let m = 1; params.has(`TagSpecification.${n}.Tag.${m}.Key`); m++) {
      tags[params.get(`TagSpecification.${n}.Tag.${m}.Key`) as string] =
        params.get(`TagSpecification.${n}.Tag.${m}.Value`) ?? "";
    }
  }
  return tags;
}
