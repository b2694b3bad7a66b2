// What the demo's Node parts (demo-bridge.mjs, demo-prefix.mjs) share: printing, waiting, and the
// simulator's control API (the ENIs it holds, the EC2 calls it received), starting the bridge.
import { spawn } from "node:child_process";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const say = (line) => process.stdout.write(`${line}\n`);

/** Waits until `check()` holds, or throws naming `what` after `timeoutMs`. */
export async function until(check, what, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`demo: never happened: ${what}`);
    await sleep(50);
  }
}

/** A caller of the simulator's control API at `base` (ready.control): JSON in, JSON out. */
export function controlApi(base) {
  return async (method, path, body) => {
    const r = await fetch(`${base}${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return text === "" ? undefined : JSON.parse(text);
  };
}

/** Prints the EC2 calls that changed something since the last time (or `none`), then forgets them. */
export async function printCalls(control, none) {
  const calls = (await control("GET", "/calls")).filter(
    (c) => !c.action.startsWith("Describe") && !c.action.startsWith("Get"),
  );
  if (calls.length === 0) say(`   ${none}`);
  for (const c of calls) {
    const p = Object.entries(c.params)
      .filter(([k]) => k !== "Action" && k !== "Version")
      .map(([k, v]) => `${k}=${v}`);
    say(`   ${c.action} ${p.join(" ")} -> ${c.outcome}`);
  }
  await control("DELETE", "/calls");
}

/**
 * Starts `multus-ipmgr bridge` for one simulated node, configured as its DaemonSet pod would be: the node's
 * IMDS (`imds`) and the simulator's EC2, `kubeconfig`, /readyz on 127.0.0.1:`port`, warnings only, and
 * `settings` (IPMGR_*) on top. Its stderr is kept and printed if it exits with an error.
 */
export function startBridge({ ready, imds, nodeName, kubeconfig, port, settings }) {
  const bridge = spawn(process.execPath, ["dist/multus-ipmgr.mjs", "bridge"], {
    stdio: ["ignore", "ignore", "pipe"],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      AWS_EC2_METADATA_SERVICE_ENDPOINT: imds,
      AWS_ENDPOINT_URL_EC2: ready.ec2,
      AWS_ACCESS_KEY_ID: "demo",
      AWS_SECRET_ACCESS_KEY: "demo",
      NODE_NAME: nodeName,
      IPMGR_KUBECONFIG: kubeconfig,
      IPMGR_TERMINATION_LOG: "",
      IPMGR_HTTP_HOST: "127.0.0.1",
      IPMGR_HTTP_PORT: String(port),
      IPMGR_LOG_LEVEL: "warn",
      ...settings,
    },
  });
  let stderr = "";
  bridge.stderr.on("data", (d) => {
    stderr += d;
  });
  bridge.once("exit", (code) => {
    if (code !== 0 && code !== null)
      process.stderr.write(`demo: the bridge exited with ${code}: ${stderr}\n`);
  });
  return bridge;
}
