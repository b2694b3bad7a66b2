// `url` as node-fetch 2 (the fetch of @kubernetes/client-node) sees it in the bundle (scripts/build.mjs):
// Node's module, but with a `parse` built on the WHATWG URL API. node-fetch parses every request's URL with
// url.parse(), which Node 24 deprecates at run time (DEP0169: a warning on stderr at the bridge's first API
// call). node-fetch has already normalized an absolute URL with `new URL` by then; it refuses a relative
// one (no protocol), as it does here. The fields are those url.parse() gives and node-fetch reads: protocol,
// hostname, port, path and the rest that http.request and url.format() take.
import * as url from "node:url";

export function parse(input) {
  let parsed;
  try {
    parsed = new URL(input);
  } catch {
    return {
      protocol: null,
      slashes: null,
      hostname: null,
      host: null,
      href: input,
      path: input,
      pathname: input,
    };
  }
  return {
    auth: null,
    ...url.urlToHttpOptions(parsed),
    slashes: true,
    host: parsed.host,
    port: parsed.port === "" ? null : parsed.port,
    search: parsed.search === "" ? null : parsed.search,
    hash: parsed.hash === "" ? null : parsed.hash,
    query: parsed.search === "" ? null : parsed.search.slice(1),
  };
}

export * from "node:url";
export default { ...url, parse };
