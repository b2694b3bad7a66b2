import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/metrics.js";
import { SidecarMetrics } from "../src/sidecar/metrics.js";

/** The text of README.md's section `heading` (a `## ` heading), up to the next `## `. */
function section(heading: string): string {
  const readme = readFileSync("README.md", "utf8");
  const start = readme.indexOf(`\n## ${heading}\n`);
  expect(start, `README.md has no section "## ${heading}"`).toBeGreaterThanOrEqual(0);
  const end = readme.indexOf("\n## ", start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

function metricNames(registry: { getMetricsAsArray(): { name: string }[] }): string[] {
  return registry.getMetricsAsArray().map((m) => m.name);
}

describe("README.md's Metrics section", () => {
  const metrics = section("Metrics");

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
