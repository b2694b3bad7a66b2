// The demo's bridge part (run by scripts/demo.sh; needs no root): the simulator with its Kubernetes API on
// 127.0.0.1 (examples/world-bridge.yaml), `multus-ipmgr bridge` for node 1, pods appearing on that node in
// one wave of EC2 calls, and a deleted pod's address released after the grace. Removes what it made.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { controlApi, printCalls, say, startBridge, until } from "./demo-lib.mjs";

const NODE_NAME = "ip-198-51-100-10.ec2.internal"; // i-0bridge1 in examples/world-bridge.yaml
const ENI = "eni-0b1multus";
const MAC = "02:00:00:00:01:01";
const GRACE_MS = 2000;
const work = mkdtempSync(join(tmpdir(), "ipmgr-demo-bridge-"));
const children = [];

function cleanup() {
  for (const child of children) child.kill("SIGKILL");
  rmSync(work, { recursive: true, force: true });
}
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    cleanup();
    process.exit(130);
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function main() {
  const kubeconfig = join(work, "kubeconfig");
  const sim = spawn(
    process.execPath,
    ["dist/multus-ipmgr.mjs", "sim", "--world", "examples/world-bridge.yaml", "--kubeconfig", kubeconfig],
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
  const control = controlApi(ready.control);
  const eni = async () => (await control("GET", "/state")).enis.find((e) => e.eniId === ENI);
  const showEni = async () => {
    const e = await eni();
    say(`   ${ENI}  IPv4: ${e.ipv4s.join(", ")}  IPv6: ${e.ipv6s.join(", ") || "none"}`);
  };
  const showCalls = () => printCalls(control, "(no EC2 change)");
  say(`   ready: kubernetes ${ready.kubernetes}, kubeconfig written for the bridge`);

  const port = await freePort();
  const bridge = startBridge({
    ready,
    imds: ready.imds["i-0bridge1"],
    nodeName: NODE_NAME,
    kubeconfig,
    port,
    settings: {
      IPMGR_ALLOWED_CIDRS: "198.51.100.192/27,2001:db8:100:2::/64",
      IPMGR_BRIDGE_RELEASE_GRACE_MS: String(GRACE_MS),
    },
  });
  children.push(bridge);
  const readyz = async () => {
    try {
      return (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200;
    } catch {
      return false;
    }
  };
  await until(readyz, "the bridge ready");
  say(
    `== multus-ipmgr bridge for node ${NODE_NAME} (as a DaemonSet pod would run): its pod upf-0 is in place`,
  );
  await showCalls();
  await showEni();

  say("");
  say("== three pods appear on the node at once (Multus wrote their network-status):");
  const pods = [
    ["upf-10", "198.51.100.200"],
    ["upf-11", "198.51.100.201"],
    ["upf-12", "198.51.100.202"],
  ];
  for (const [name, ip] of pods) {
    await control("POST", "/kubernetes/pods", {
      namespace: "cnf",
      name,
      nodeName: NODE_NAME,
      labels: { app: "upf" },
      annotations: { "k8s.v1.cni.cncf.io/networks": "multus-ipvlan" },
      networkStatus: [
        { name: "aws-cni", interface: "eth0", ips: ["198.51.100.12"], default: true },
        { name: "cnf/multus-ipvlan", interface: "net1", ips: [ip], mac: MAC },
      ],
    });
    say(`   cnf/${name}  net1 ${ip}`);
  }
  await until(async () => {
    const held = (await eni()).ipv4s;
    return pods.every(([, ip]) => held.includes(ip));
  }, "the three addresses held");
  say("== one wave, one EC2 call for the three:");
  await showCalls();
  await showEni();

  say("");
  say(`== cnf/upf-11 is deleted; its address is released once the ${GRACE_MS} ms grace has passed:`);
  const deletedAt = Date.now();
  await control("DELETE", "/kubernetes/pods/cnf/upf-11");
  await until(async () => !(await eni()).ipv4s.includes("198.51.100.201"), "upf-11's address released");
  say(`   released after ${((Date.now() - deletedAt) / 1000).toFixed(1)} s`);
  await showCalls();
  await showEni();

  bridge.kill("SIGTERM");
  const code = await new Promise((resolve) => bridge.once("exit", resolve));
  say(`== SIGTERM: the bridge exits ${code}`);
  sim.kill("SIGTERM");
}

try {
  await main();
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
} finally {
  cleanup();
}
