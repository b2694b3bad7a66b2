/** `links`' settings: the bridge's two variables read the same way, and the errors of a missing or bad list. */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/eni/errors/config-error.js";
import { linksSettings, loadLinksConfig } from "../src/ipam-whereabouts-bridge/links/links-settings.js";
import { bridgeSettings } from "../src/ipam-whereabouts-bridge/settings.js";

const NETWORKS = JSON.stringify([
  {
    name: "multus1",
    deviceIndex: 1,
    subnet: { byZone: { "us-east-1a": "subnet-0123" } },
    securityGroups: { ids: ["sg-0123"] },
  },
]);

describe("links settings", () => {
  it("reads IPMGR_BRIDGE_ATTACH_NETWORKS and IPMGR_BRIDGE_LINK_STATUS_FILE as the bridge does (variable, flag, default)", () => {
    const shape = (s: { env: string; flag: string; default: string | undefined }) => [
      s.env,
      s.flag,
      s.default,
    ];
    expect(shape(linksSettings.attachNetworks)).toEqual(shape(bridgeSettings.attachNetworks));
    expect(shape(linksSettings.linkStatusFile)).toEqual(shape(bridgeSettings.linkStatusFile));
  });

  it("has defaults for everything but the networks", () => {
    const config = loadLinksConfig([], { IPMGR_BRIDGE_ATTACH_NETWORKS: NETWORKS });
    expect(config).toMatchObject({
      linkStatusFile: "/run/multus-ipmgr/links.json",
      intervalMs: 2000,
      networkdDir: "/run/systemd/network",
      networks: [{ name: "multus1", deviceIndex: 1, networkCardIndex: 0, mtu: 9001 }],
    });
  });

  it("refuses to start without networks, naming the variable and the fix", () => {
    expect(() => loadLinksConfig([], {})).toThrow(
      new ConfigError(
        "IPMGR_BRIDGE_ATTACH_NETWORKS",
        undefined,
        "the links agent brings up the links of these networks; set it to the bridge's JSON list (docs/attach-mode.md)",
      ),
    );
  });

  it("refuses a list the bridge would refuse, with the parser's sentence", () => {
    expect(() => loadLinksConfig([], { IPMGR_BRIDGE_ATTACH_NETWORKS: "[{" })).toThrow(
      /^IPMGR_BRIDGE_ATTACH_NETWORKS="\[\{": /,
    );
  });

  it("takes an empty IPMGR_LINKS_NETWORKD_DIR (no networkd files) and refuses an interval out of range", () => {
    expect(
      loadLinksConfig([], { IPMGR_BRIDGE_ATTACH_NETWORKS: NETWORKS, IPMGR_LINKS_NETWORKD_DIR: "" })
        .networkdDir,
    ).toBe("");
    expect(() =>
      loadLinksConfig([], { IPMGR_BRIDGE_ATTACH_NETWORKS: NETWORKS, IPMGR_LINKS_INTERVAL_MS: "10" }),
    ).toThrow(ConfigError);
  });
});
