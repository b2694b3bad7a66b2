import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { SidecarMetrics } from "../src/sidecar/metrics.js";

function metricNames(registry: { getMetricsAsArray(): { name: string }[] }): string[] {
  return registry.getMetricsAsArray().map((m) => m.name);
}

describe("docs/metrics.md", () => {
  const metrics = readFileSync("docs/metrics.md", "utf8");

  it("names every metric the sidecar registers", () => {
    const names = metricNames(new SidecarMetrics().registry);
    expect(names.length).toBeGreaterThan(10);
    expect(names.filter((n) => !metrics.includes(`\`${n}\``))).toEqual([]);
  });

  it("names every metric the bridge registers", () => {
    const names = metricNames(new BridgeMetrics().registry);
    expect(names.length).toBeGreaterThan(10);
    expect(names.filter((n) => !metrics.includes(`\`${n}\``))).toEqual([]);
  });

  it("names no metric that neither registers", () => {
    const known = new Set([
      ...metricNames(new SidecarMetrics().registry),
      ...metricNames(new BridgeMetrics().registry),
    ]);
    const listed = [...metrics.matchAll(/`((?:multus_ipmgr|process|nodejs)_[a-z_]+)`/g)].map(
      (m) => m[1] ?? "",
    );
    expect(listed.filter((n) => !known.has(n))).toEqual([]);
  });
});
