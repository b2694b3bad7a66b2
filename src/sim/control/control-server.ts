import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { CallLog } from "../call-log.js";
import type { FaultState } from "../fault-state.js";
import { type Faults, partialFaultsSchema } from "../faults.js";
import { readBody, sendJson } from "../http-util.js";
import type { SimState } from "../sim-state.js";

export interface ControlServerDeps {
  readonly state: () => SimState;
  readonly calls: CallLog;
  readonly faults: FaultState;
}

async function handle(deps: ControlServerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? "/", "http://control").pathname.replace(/\/+$/, "") || "/";
  const route = `${req.method} ${path}`;
  switch (route) {
    case "GET /healthz":
      sendJson(res, 200, { ok: true });
      return;
    case "GET /state":
      sendJson(res, 200, deps.state());
      return;
    case "GET /calls":
      sendJson(res, 200, deps.calls.list());
      return;
    case "DELETE /calls":
      deps.calls.clear();
      res.writeHead(204).end();
      return;
    case "GET /faults":
      sendJson(res, 200, deps.faults.get());
      return;
    case "PUT /faults": {
      let input: unknown;
      try {
        input = JSON.parse(await readBody(req));
      } catch (error) {
        sendJson(res, 400, { error: `body is not JSON: ${(error as Error).message}` });
        return;
      }
      const parsed = partialFaultsSchema.safeParse(input);
      if (!parsed.success) {
        const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`);
        sendJson(res, 400, { error: `invalid faults: ${problems.join("; ")}` });
        return;
      }
      deps.faults.set(parsed.data as Partial<Faults>);
      sendJson(res, 200, deps.faults.get());
      return;
    }
    default:
      sendJson(res, 404, {
        error: `no route ${route}; try GET /state, GET|DELETE /calls, GET|PUT /faults, GET /healthz`,
      });
  }
}

/** The JSON control API: state, call log and faults of a running simulator. */
export function createControlServer(deps: ControlServerDeps): Server {
  return createServer((req, res) => {
    handle(deps, req, res).catch((error: unknown) => {
      sendJson(res, 500, { error: String(error) });
    });
  });
}
