/**
 * `npm run bench`: every figure beside its target. Needs root and iproute2 (the binaries run in network
 * namespaces, as in the end-to-end tests). Targets live here, never in tests.
 */
import { closeOpenLabs, labUnavailableReason } from "../test/helpers/netns.js";
import { benchBridge } from "./bridge.js";
import { benchCniPlugin } from "./cni-plugin.js";
import { benchElasticIps } from "./elastic-ips.js";
import { benchInit } from "./init.js";
import type { BenchResult } from "./result.js";
import { benchScaleModel } from "./scale-model.js";
import { benchSidecar } from "./sidecar.js";
import { benchSidecarScenarios } from "./sidecar-scenarios.js";
import { benchStartup } from "./startup.js";

function print(results: readonly BenchResult[]): void {
  for (const r of results) {
    const value = Number.isFinite(r.value)
      ? r.value.toFixed(r.unit === "calls" || r.unit === "reconciles" ? 0 : r.unit === "x bare node" ? 2 : 1)
      : "n/a";
    process.stdout.write(`${r.ok ? "ok  " : "MISS"}  ${r.name}: ${value} ${r.unit}  (target ${r.target})\n`);
  }
}

// A bench stopped by Ctrl-C or SIGTERM still removes its namespaces, links, processes and temporary files.
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const) {
  process.once(signal, () => {
    process.stderr.write(`bench: ${signal}: removing the labs\n`);
    void closeOpenLabs().finally(() => process.exit(code));
  });
}

const only = process.argv[2];
// The bridge runs on the host, as on a node (hostNetwork), and the scale model in this process: no namespace lab.
const reason = only === "bridge" || only === "scale-model" ? undefined : labUnavailableReason();
if (reason !== undefined) {
  process.stderr.write(`bench: ${reason}\n`);
  process.exit(2);
}
const all: BenchResult[] = [];
if (only === undefined || only === "init") {
  process.stdout.write("# init\n");
  const results = await benchInit();
  print(results);
  all.push(...results);
}
if (only === undefined || only === "startup") {
  process.stdout.write("# start-up, against a bare `node -e 0` in the same run\n");
  const results = await benchStartup();
  print(results);
  all.push(...results);
}
if (only === undefined || only === "sidecar") {
  process.stdout.write("# sidecar\n");
  const results = await benchSidecar();
  print(results);
  all.push(...results);
}
if (only === undefined || only === "sidecar" || only === "sidecar-scenarios") {
  process.stdout.write("# sidecar: a floating address stays routed\n");
  const results = await benchSidecarScenarios();
  print(results);
  all.push(...results);
}
if (only === undefined || only === "sidecar" || only === "elastic-ips") {
  process.stdout.write("# sidecar: Elastic IPs follow floating addresses\n");
  const results = await benchElasticIps();
  print(results);
  all.push(...results);
}
if (only === undefined || only === "bridge") {
  process.stdout.write("# bridge\n");
  const results = await benchBridge();
  print(results);
  all.push(...results);
}
if (only === undefined || only === "cni-plugin") {
  process.stdout.write("# plugin mode: what the chained plugin adds to a pod's ADD\n");
  const results = await benchCniPlugin();
  print(results);
  all.push(...results);
}
if (only === undefined || only === "scale-model") {
  process.stdout.write("# scale model: per-address mode against prefix mode on one account's EC2 buckets\n");
  const results = await benchScaleModel();
  print(results);
  all.push(...results);
}
process.exitCode = all.every((r) => r.ok) ? 0 : 1;
