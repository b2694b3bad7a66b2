// What the demo's Node parts (demo-bridge.mjs, demo-prefix.mjs) share: printing, waiting, and the
// simulator's control API (the ENIs it holds, the EC2 calls it received).

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
