import { Ec2ApiError } from "../errors/ec2-api-error.js";
import { documentedNetworkInterfaceFilters } from "./documented-filters.js";
import type { Ec2Handler } from "./ec2-context.js";
import { type EniView, eniViewOf, networkInterfaceFields } from "./eni-view.js";
import { applyFilters, type FilterCatalogue } from "./filters.js";
import { checkEniId, enisNamed } from "./model/enis.js";
import { paginate } from "./paging.js";
import { renderNetworkInterface } from "./render-network-interface.js";
import { itemSet } from "./xml.js";

export const networkInterfaceFilters: FilterCatalogue<EniView> = {
  documented: documentedNetworkInterfaceFilters,
  fields: networkInterfaceFields,
  tags: (v) => v.eni.tags,
};

/** DescribeNetworkInterfaces: ids, the filters of networkInterfaceFilters, paging. */
export const describeNetworkInterfaces: Ec2Handler = (ctx) => {
  const { params, topology } = ctx;
  const ids = params.list("NetworkInterfaceId").map(checkEniId);
  if (ids.length > 0 && params.has("MaxResults")) {
    throw new Ec2ApiError(
      "InvalidParameterCombination",
      "The parameter NetworkInterfaceIds cannot be used with the parameter MaxResults",
    );
  }
  const enis = enisNamed(ctx.readState(), ids);
  const views = enis.map((e) => eniViewOf(e, topology));
  const matching = applyFilters(views, params.filters(), networkInterfaceFilters);
  const page = paginate("DescribeNetworkInterfaces", matching, params);
  return itemSet("networkInterfaceSet", page.items.map(renderNetworkInterface)) + page.nextTokenXml;
};
