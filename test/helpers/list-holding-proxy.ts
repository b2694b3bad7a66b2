/**
 * An HTTP proxy in front of the simulator's Kubernetes API, independent of the simulator's own faults: while
 * `holdLists`, a list (a GET of a collection without `watch=true`) gets no answer and is kept open, as an API
 * server or a middlebox that stalls would keep it; while `freezeWatches`, the bytes of open watches are
 * dropped (the connections stay open), so that the watches lag behind without failing. Every other request
 * passes. Listens on 127.0.0.1; `close` ends what it holds.
 */
import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ListHoldingProxy {
  readonly url: string;
  /** Lists held so far, as their paths. */
  readonly heldLists: string[];
  /** Lists answered so far, as their paths. */
  readonly passedLists: string[];
  holdLists: boolean;
  freezeWatches: boolean;
  close(): Promise<void>;
}

/** Whether the request lists a collection: a GET with no `watch=true`, of a path that names no object. */
export function isList(method: string | undefined, url: URL): boolean {
  if (method !== "GET" || url.searchParams.get("watch") === "true") return false;
  const parts = url.pathname.split("/").filter((p) => p !== "");
  // /api/v1/pods, /api/v1/namespaces/ns/pods, /apis/group/version/[namespaces/ns/]resource
  const base = parts[0] === "api" ? 2 : parts[0] === "apis" ? 3 : -1;
  if (base < 0) return false;
  const rest = parts.slice(base);
  return rest.length === 1 || (rest.length === 3 && rest[0] === "namespaces");
}

export async function startListHoldingProxy(target: string): Promise<ListHoldingProxy> {
  const state = { holdLists: false, freezeWatches: false };
  const heldLists: string[] = [];
  const passedLists: string[] = [];
  const open = new Set<ServerResponse>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", target);
    open.add(res);
    res.on("close", () => open.delete(res));
    const list = isList(req.method, url);
    if (list && state.holdLists) {
      heldLists.push(url.pathname);
      return;
    }
    if (list) passedLists.push(url.pathname);
    const watch = url.searchParams.get("watch") === "true";
    const upstream = request(url, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      res.flushHeaders();
      answer.on("data", (chunk: Buffer) => {
        if (!(watch && state.freezeWatches)) res.write(chunk);
      });
      answer.on("end", () => res.end());
      answer.on("error", () => res.destroy());
    });
    upstream.on("error", () => res.destroy());
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    heldLists,
    passedLists,
    get holdLists() {
      return state.holdLists;
    },
    set holdLists(value: boolean) {
      state.holdLists = value;
    },
    get freezeWatches() {
      return state.freezeWatches;
    },
    set freezeWatches(value: boolean) {
      state.freezeWatches = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
