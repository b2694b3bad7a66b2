// The demo's prefix-mode part (run by scripts/demo.sh as root; `sudo node scripts/demo-prefix.mjs` alone):
// the simulator with examples/world-prefix.yaml in a network namespace of its own, a "node" namespace whose
// eth1 carries the MAC of the node's Multus ENI and no address (as a Multus ENI is brought up), and
// `multus-ipmgr bridge --prefix-mode defer` in it. The node's whereabouts slices become one IPv4 /28 and one
// IPv6 /80 prefix on the ENI, then three pods start and cost no EC2 call at all.
// The outer process makes the namespaces, starts the simulator and removes everything at the end (also on
// failure or Ctrl-C); the walkthrough runs inside the node namespace (`--inside`), where the simulator is
// reachable over the veth: a process in the root namespace could not reach it.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { controlApi, printCalls, say, startBridge, until } from "./demo-lib.mjs";

const NODE_NAME = "ip-192-0-2-10.ec2.internal"; // i-0prefix1 in examples/world-prefix.yaml
const INSTANCE = "i-0prefix1";
const ENI = "eni-0p1multus";
const ENI_MAC = "02:00:00:00:03:01";
const SLICES = ["192.0.2.192/28", "2001:db8:200:2:10::/80"];
const ALLOWED = "192.0.2.192/27,2001:db8:200:2:10::/76";
const SIM_ADDRESS = "203.0.113.1";
const NODE_ADDRESS = "203.0.113.10";
const HTTP_PORT = 9464;

if (process.argv[2] === "--inside") await inside(JSON.parse(process.argv[3]), process.argv[4]);
else await outside();

/** Root: the namespaces, the simulator, the walkthrough in the node namespace, and the cleanup. */
async function outside() {
  if (process.getuid?.() !== 0) {
    process.stderr.write("demo: the prefix-mode part needs root for its network namespaces (sudo)\n");
    process.exit(1);
  }
  const tag = `ipmdemo-${process.pid}`;
  const simNs = `${tag}-psim`;
  const nodeNs = `${tag}-pnode`;
  const work = mkdtempSync(join(tmpdir(), "ipmgr-demo-prefix-"));
  const children = [];
  const ip = (...args) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
  const cleanup = () => {
    for (const child of children) child.kill("SIGKILL");
    for (const ns of [nodeNs, simNs]) {
      try {
        ip("netns", "del", ns);
      } catch {
        // not made yet
      }
    }
    rmSync(work, { recursive: true, force: true });
  };
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => {
      cleanup();
      process.exit(130);
    });
  }
  try {
    say(`== network namespaces: ${simNs} (simulator, ${SIM_ADDRESS}) and ${nodeNs} (the node)`);
    ip("netns", "add", simNs);
    ip("netns", "add", nodeNs);
    for (const ns of [simNs, nodeNs]) ip("-n", ns, "link", "set", "lo", "up");
    ip("link", "add", "eth0", "netns", nodeNs, "type", "veth", "peer", "name", "demo-psim", "netns", simNs);
    ip("-n", simNs, "addr", "add", `${SIM_ADDRESS}/24`, "dev", "demo-psim");
    ip("-n", simNs, "link", "set", "demo-psim", "up");
    ip("-n", nodeNs, "addr", "add", `${NODE_ADDRESS}/24`, "dev", "eth0");
    ip("-n", nodeNs, "link", "set", "eth0", "up");
    // The Multus ENI as the node sees it: eth1, its MAC, up, no address.
    ip("link", "add", "eth1", "netns", nodeNs, "type", "veth", "peer", "name", "demo-pwire", "netns", simNs);
    ip("-n", nodeNs, "link", "set", "dev", "eth1", "address", ENI_MAC);
    ip("-n", simNs, "link", "set", "demo-pwire", "up");
    ip("-n", nodeNs, "link", "set", "eth1", "up");

    const kubeconfig = join(work, "kubeconfig");
    const sim = spawn(
      "ip",
      [
        ...["netns", "exec", simNs, process.execPath, "dist/multus-ipmgr.mjs", "sim"],
        ...["--world", "examples/world-prefix.yaml", "--host", SIM_ADDRESS, "--kubeconfig", kubeconfig],
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    children.push(sim);
    let simErr = "";
    sim.stderr.on("data", (d) => {
      simErr += d;
    });
    const ready = await new Promise((resolve, reject) => {
      createInterface({ input: sim.stdout }).once("line", (line) => resolve(JSON.parse(line)));
      sim.once("exit", (code) => reject(new Error(`the simulator exited with ${code}: ${simErr}`)));
    });
    say("== starting the simulator with examples/world-prefix.yaml");
    const walk = spawn(
      "ip",
      [
        ...["netns", "exec", nodeNs, process.execPath, "scripts/demo-prefix.mjs"],
        ...["--inside", JSON.stringify(ready), kubeconfig],
      ],
      { stdio: "inherit" },
    );
    children.push(walk);
    const code = await new Promise((resolve) => walk.once("exit", (c) => resolve(c ?? 1)));
    if (code !== 0) process.exitCode = code;
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  } finally {
    cleanup();
  }
}

/** In the node namespace: the bridge, the slices becoming prefixes, three pods with no EC2 call. */
async function inside(ready, kubeconfig) {
  const children = [];
  const control = controlApi(ready.control);
  const kube = async (method, path, body) => {
    const r = await fetch(`${ready.kubernetes}${path}`, {
      method,
      headers: { authorization: "Bearer demo", "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer = await r.json();
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(answer)}`);
    return answer;
  };
  const eni = async () => (await control("GET", "/state")).enis.find((e) => e.eniId === ENI);
  const showEni = async () => {
    const e = await eni();
    const list = (values) => (values ?? []).join(", ") || "none";
    say(`   ${ENI}  prefixes: ${list([...(e.ipv4Prefixes ?? []), ...(e.ipv6Prefixes ?? [])])}`);
    say(`   ${" ".repeat(ENI.length)}  secondary addresses: ${list([...e.ipv4s.slice(1), ...e.ipv6s])}`);
  };
  const showCalls = () => printCalls(control, "(no EC2 change: not one call)");
  const readyz = async () => {
    try {
      const r = await fetch(`http://127.0.0.1:${HTTP_PORT}/readyz`);
      return { ok: r.status === 200, text: await r.text() };
    } catch {
      return { ok: false, text: "" };
    }
  };

  try {
    say(`== the node's slices (NodeSlicePools made by whereabouts' node-slice controller):`);
    const pools = await kube(
      "GET",
      "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/nodeslicepools",
    );
    for (const pool of pools.items) {
      const mine = pool.status.allocations.find((a) => a.nodeName === NODE_NAME);
      say(
        `   ${pool.metadata.name}: range ${pool.spec.range} in ${pool.spec.sliceSize}s; ${NODE_NAME}: ${mine?.sliceRange}`,
      );
    }
    say("== before: the ENI as EC2 sees it");
    await showEni();
    await control("DELETE", "/calls");

    const bridge = startBridge({
      ready,
      imds: ready.imds[INSTANCE],
      nodeName: NODE_NAME,
      kubeconfig,
      port: HTTP_PORT,
      settings: { IPMGR_ALLOWED_CIDRS: ALLOWED, IPMGR_BRIDGE_PREFIX_MODE: "defer" },
    });
    children.push(bridge);
    say("");
    say(`== multus-ipmgr bridge --prefix-mode defer for ${NODE_NAME} (eth1: MAC ${ENI_MAC}, no address)`);
    await until(async () => {
      const e = await eni();
      const held = [...(e.ipv4Prefixes ?? []), ...(e.ipv6Prefixes ?? [])];
      return SLICES.every((s) => held.includes(s)) && (await readyz()).ok;
    }, "the node's slices held as prefixes");
    say("== the slices became prefixes: one call per family");
    await showCalls();
    await showEni();

    say("");
    say("== three pods start on the node; whereabouts gives each an address of the node's slices:");
    for (const name of ["upf-0", "upf-1", "upf-2"]) {
      await kube("POST", "/api/v1/namespaces/cnf/pods", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name,
          namespace: "cnf",
          annotations: { "k8s.v1.cni.cncf.io/networks": "kube-system/slices-v4,kube-system/slices-v6" },
        },
        spec: { nodeName: NODE_NAME, containers: [{ name: "app", image: "registry.example/upf:1" }] },
      });
    }
    for (const name of ["upf-0", "upf-1", "upf-2"]) {
      let pod;
      await until(async () => {
        pod = await kube("GET", `/api/v1/namespaces/cnf/pods/${name}`);
        return pod.status?.phase === "Running";
      }, `pod ${name} running`);
      const status = JSON.parse(pod.metadata.annotations["k8s.v1.cni.cncf.io/network-status"]);
      const multus = status.filter((s) => !s.default);
      say(`   cnf/${name}  ${multus.map((s) => `${s.interface} ${s.ips.join(" ")}`).join("  ")}`);
    }
    await until(
      async () => (await readyz()).text.includes("6 of 6 pod addresses held"),
      "the six addresses held",
    );
    say("== the bridge counts the six addresses held (inside the prefixes) and made:");
    await showCalls();
    await showEni();
    say("== the bridge's /readyz:");
    for (const line of (await readyz()).text.trim().split("\n")) say(`   ${line}`);

    bridge.kill("SIGTERM");
    const code = await new Promise((resolve) => bridge.once("exit", resolve));
    say(`== SIGTERM: the bridge exits ${code}`);
  } catch (error) {
    const { text } = await readyz();
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    if (text !== "") process.stderr.write(`the bridge's /readyz:\n${text}\n`);
    process.exitCode = 1;
  } finally {
    for (const child of children) child.kill("SIGKILL");
  }
}
