/**
 * examples/nad-cni-plugin.yaml, plugin mode's NetworkAttachmentDefinition: its conflist read as the bridge
 * reads it twice, as a NAD (its whereabouts range, from ipvlan's ipam) and as the netconf the runtime gives
 * the multus-ipmgr plugin (its own entry with the list's name and cniVersion, and ipvlan's result).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { parseNetConf, sandboxAddresses } from "../src/ipam-whereabouts-bridge/cni/cni-netconf.js";
import { rangesOfNad } from "../src/ipam-whereabouts-bridge/state/whereabouts-ranges.js";
import { ipvlanResult } from "./helpers/cni-socket-client.js";

const nad = parseYaml(readFileSync("examples/nad-cni-plugin.yaml", "utf8")) as {
  kind: string;
  metadata: { name: string; namespace: string };
  spec: { config: string };
};
const conflist = JSON.parse(nad.spec.config) as {
  cniVersion: string;
  name: string;
  plugins: { type: string; [key: string]: unknown }[];
};

describe("examples/nad-cni-plugin.yaml", () => {
  it("is a NAD whose conflist chains multus-ipmgr last, after ipvlan", () => {
    expect(nad.kind).toBe("NetworkAttachmentDefinition");
    expect(conflist.name).toBe(nad.metadata.name);
    expect(conflist.plugins.map((p) => p.type)).toEqual(["ipvlan", "multus-ipmgr"]);
  });

  it("gives the bridge its whereabouts range, with no problem", () => {
    const { ranges, problems } = rangesOfNad({ ...nad.metadata, config: nad.spec.config });
    expect(problems).toEqual([]);
    expect(ranges.map((r) => [r.cidr, r.first, r.last, r.exclude])).toEqual([
      ["198.51.100.192/27", "198.51.100.193", "198.51.100.222", ["198.51.100.192/30"]],
    ]);
  });

  it("gives the plugin a netconf the bridge parses: the default socket, failOpen off, a 30 s deadline", () => {
    const [, plugin] = conflist.plugins;
    const prevResult = ipvlanResult("02:00:00:00:01:01", ["198.51.100.200"]);
    // What a runtime writes on the plugin's stdin (CNI spec 1.0): its entry, the list's name and version, prevResult.
    const stdin = JSON.stringify({
      ...plugin,
      name: conflist.name,
      cniVersion: conflist.cniVersion,
      prevResult,
    });
    const conf = parseNetConf(stdin);
    expect(conf).toEqual({
      cniVersion: "1.0.0",
      name: "ipvlan-multus-routed",
      type: "multus-ipmgr",
      failOpen: false,
      deadlineSeconds: 30,
      rawPrevResult: prevResult,
    });
    expect(plugin?.socket).toBeUndefined();
    expect(sandboxAddresses(conf.rawPrevResult)).toEqual([
      { address: "198.51.100.200", interfaceName: "net1", mac: "02:00:00:00:01:01" },
    ]);
  });
});
