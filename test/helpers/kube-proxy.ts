/**
 * A pass-through HTTP proxy in front of the simulator's Kubernetes API that a test can turn into an outage:
 * while `failing`, every request gets a 500 Status and open watches are cut; `refuse()` stops listening
 * (connections refused, open ones reset) until `accept()`; `freeze()` answers nothing and forwards nothing
 * more on open watches, without closing any connection (a silent partition), until `thaw()`, which resets
 * what it held, or `thaw({ reset: false })`, which leaves it dead (no answer, no byte, no reset, as a NAT
 * or a load balancer that lost the flows) while new connections pass again. Watches stream through as they
 * come. Listens on 127.0.0.1.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeKubeconfig } from "../../src/sim/kube/kubeconfig.js";

export interface KubeProxy {
  readonly url: string;
  /** Requests seen, as `GET /api/v1/pods?... STATUS`. */
  readonly requests: string[];
  failing: boolean;
  /** Requests a freeze holds unanswered now (and a thaw without reset left dead). */
  readonly heldCount: number;
  /** Cuts every open response (watches). */
  cut(): void;
  /** Stops listening and resets every open connection: new connections are refused. */
  refuse(): Promise<void>;
  /** Listens again on the same port. */
  accept(): Promise<void>;
  /** Answers nothing and forwards nothing more, closing nothing. */
  freeze(): void;
  /**
   * Ends the freeze: new requests pass again; the connections it held are reset, or with `reset: false`
   * left dead (the requests held never answered, the frozen watches never sent another byte).
   */
  thaw(options?: { readonly reset?: boolean }): void;
  close(): Promise<void>;
}

export async function startKubeProxy(target: string): Promise<KubeProxy> {
  const open = new Set<ServerResponse>();
  const requests: string[] = [];
  const state = { failing: false, frozen: false };
  const sockets = new Set<Socket>();
  const held = new Set<ServerResponse>();
  /** Responses a thaw without reset left dead: nothing more is written to them. */
  const dead = new WeakSet<ServerResponse>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (state.frozen) {
      held.add(res);
      return;
    }
    if (state.failing) {
      requests.push(`${req.method} ${req.url} 500`);
      res.writeHead(500, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          message: "etcdserver: request timed out",
          reason: "InternalError",
          code: 500,
        }),
      );
      return;
    }
    const upstream = request(
      new URL(req.url ?? "/", target),
      { method: req.method, headers: req.headers },
      (answer) => {
        requests.push(`${req.method} ${req.url} ${answer.statusCode}`);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.flushHeaders();
        answer.on("data", (chunk: Buffer) => {
          // Frozen: the bytes are dropped, as a partition drops them; the connection stays open.
          if (!state.frozen && !dead.has(res)) res.write(chunk);
        });
        answer.on("end", () => {
          if (!state.frozen && !dead.has(res)) res.end();
        });
        answer.on("error", () => res.destroy());
      },
    );
    upstream.on("error", () => res.destroy());
    open.add(res);
    res.on("close", () => {
      open.delete(res);
      upstream.destroy();
    });
    req.pipe(upstream);
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const resetAll = (): void => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get failing() {
      return state.failing;
    },
    get heldCount() {
      return held.size;
    },
    set failing(value: boolean) {
      state.failing = value;
    },
    cut() {
      for (const res of open) res.destroy();
    },
    refuse: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        resetAll();
      }),
    accept: () => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve)),
    freeze() {
      state.frozen = true;
    },
    thaw(options = {}) {
      state.frozen = false;
      const reset = options.reset ?? true;
      for (const res of held) {
        if (reset) res.destroy();
        else dead.add(res);
      }
      if (reset) held.clear();
      for (const res of open) {
        if (reset) res.destroy();
        else dead.add(res);
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        for (const res of held) res.destroy();
        if (!server.listening) {
          resetAll();
          resolve();
          return;
        }
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A kubeconfig file for `server` in a temporary directory; `remove` deletes the directory. */
export async function tempKubeconfig(server: string): Promise<{ path: string; remove(): void }> {
  const dir = mkdtempSync(join(tmpdir(), "ipmgr-kubeconfig-"));
  const path = join(dir, "kubeconfig");
  await writeKubeconfig(path, server);
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
