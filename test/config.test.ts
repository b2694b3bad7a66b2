import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { doctorSettings, loadDoctorConfig } from "../src/doctor/settings.js";
import { ConfigError } from "../src/eni/errors/config-error.js";
import { ExitCode } from "../src/eni/errors/exit-codes.js";
import { imdsEndpointOf, podSettings } from "../src/eni/process/config.js";
import {
  KNOWN_VARIABLES,
  unknownVariableSentence,
  unknownVariables,
  warnUnknownVariables,
} from "../src/eni/process/known-variables.js";
import { editDistance, nearestName } from "../src/eni/process/nearest-name.js";
import { field, parseFlags, rangeText, settingRange } from "../src/eni/process/settings.js";
import { initSettings, loadInitConfig } from "../src/init/settings.js";
import { linksSettings } from "../src/ipam-whereabouts-bridge/links/links-settings.js";
import { bridgeSettings, loadBridgeConfig } from "../src/ipam-whereabouts-bridge/settings.js";
import { BridgeMetrics } from "../src/ipam-whereabouts-bridge/telemetry/metrics.js";
import { loadSidecarConfig, sidecarSettings } from "../src/sidecar/settings.js";
import { simUsage } from "../src/sim/cli-args.js";

const base = { IPMGR_ALLOWED_CIDRS: "198.51.100.64/27, 2001:db8:100:1::/64" };

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("configuration from environment and flags", () => {
  it("applies documented defaults when only the allowed CIDRs are set", () => {
    const config = loadInitConfig([], base);
    expect(config.allowedCidrs).toEqual(["198.51.100.64/27", "2001:db8:100:1::/64"]);
    expect(config.interfaces).toEqual([]);
    expect(config.excludeInterfaces).toEqual(["lo", "eth0"]);
    expect(config.addressSource).toBe("interfaces");
    expect(imdsEndpointOf(config)).toBe("http://169.254.169.254");
    expect(config.imdsTimeoutMs).toBe(1000);
    expect(config.waitForAddressesMs).toBe(30000);
    expect(config.region).toBeUndefined();
    expect(config.ec2Endpoint).toBeUndefined();
  });

  it("lets a flag override its environment variable, in both --name value and --name=value forms", () => {
    const config = loadInitConfig(["--interfaces", "net1,net2", "--imds-timeout-ms=250"], {
      ...base,
      IPMGR_INTERFACES: "net9",
      IPMGR_IMDS_TIMEOUT_MS: "4000",
    });
    expect(config.interfaces).toEqual(["net1", "net2"]);
    expect(config.imdsTimeoutMs).toBe(250);
  });

  it("treats an empty environment variable as unset", () => {
    expect(loadInitConfig([], { ...base, AWS_REGION: "" }).region).toBeUndefined();
  });

  it("takes an empty IPMGR_TERMINATION_LOG as documented: no termination log, not the default file", () => {
    expect(loadInitConfig([], base).terminationLog).toBe("/dev/termination-log");
    expect(loadInitConfig([], { ...base, IPMGR_TERMINATION_LOG: "" }).terminationLog).toBe("");
    expect(loadSidecarConfig([], { ...base, IPMGR_TERMINATION_LOG: "" }).terminationLog).toBe("");
    expect(loadInitConfig(["--termination-log", ""], base).terminationLog).toBe("");
  });

  it("refuses to start without allowed CIDRs and says what to set", () => {
    const error = configError(() => loadInitConfig([], {}));
    expect(error.exitCode).toBe(ExitCode.config);
    expect(error.message).toBe(
      "IPMGR_ALLOWED_CIDRS=(unset): required: Comma-separated CIDRs of your Multus pod ranges, written as networks (no host bits set, no /0). Only addresses inside them are ever assigned or released; others are refused.",
    );
  });

  it("names the variable, the value and the expected form for a bad CIDR", () => {
    const error = configError(() => loadInitConfig([], { IPMGR_ALLOWED_CIDRS: "198.51.100.64/27,pods" }));
    expect(error.variable).toBe("IPMGR_ALLOWED_CIDRS");
    expect(error.message).toBe(
      'IPMGR_ALLOWED_CIDRS="198.51.100.64/27,pods": "pods" is not a CIDR; write it like 198.51.100.64/27',
    );
  });

  it("names the flag when the bad value came from a flag", () => {
    const error = configError(() => loadInitConfig(["--imds-timeout-ms", "fast"], base));
    expect(error.message).toBe(
      '--imds-timeout-ms="fast": expected a whole number of milliseconds from 50 to 60000',
    );
  });

  it("rejects an out-of-range duration", () => {
    const error = configError(() => loadInitConfig([], { ...base, IPMGR_IMDS_TIMEOUT_MS: "10" }));
    expect(error.message).toBe('IPMGR_IMDS_TIMEOUT_MS="10": must be at least 50 ms');
  });

  it("rejects an unknown flag", () => {
    const error = configError(() => loadInitConfig(["--allowed-cidr", "198.51.100.0/24"], base));
    expect(error.message).toBe(
      '--allowed-cidr="198.51.100.0/24": unknown flag; did you mean --allowed-cidrs? (--help lists them)',
    );
  });

  it("rejects an unknown address source with the accepted values", () => {
    const error = configError(() => loadInitConfig([], { ...base, IPMGR_ADDRESS_SOURCE: "annotation" }));
    expect(error.message).toBe(
      'IPMGR_ADDRESS_SOURCE="annotation": expected one of: interfaces, network-status',
    );
  });

  it("picks the IMDS endpoint as the AWS SDKs do: explicit endpoint first, else the endpoint mode's", () => {
    const ipv6 = { ...base, AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE: "IPv6" };
    expect(imdsEndpointOf(loadInitConfig([], ipv6))).toBe("http://[fd00:ec2::254]");
    expect(imdsEndpointOf(loadInitConfig(["--imds-endpoint-mode", "IPv4"], ipv6))).toBe(
      "http://169.254.169.254",
    );
    const explicit = { ...ipv6, AWS_EC2_METADATA_SERVICE_ENDPOINT: "http://192.0.2.1:8080" };
    expect(imdsEndpointOf(loadInitConfig([], explicit))).toBe("http://192.0.2.1:8080");
  });

  it("rejects an IMDS endpoint mode the SDKs would not accept, naming the two that work", () => {
    const error = configError(() =>
      loadSidecarConfig([], { ...base, AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE: "ipv6" }),
    );
    expect(error.message).toBe('AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE="ipv6": expected one of: IPv4, IPv6');
    expect(error.exitCode).toBe(ExitCode.config);
  });

  it("rejects an endpoint that is not an http URL", () => {
    const error = configError(() => loadInitConfig([], { ...base, AWS_ENDPOINT_URL_EC2: "ec2.local" }));
    expect(error.message).toBe(
      'AWS_ENDPOINT_URL_EC2="ec2.local": expected an http:// or https:// URL, e.g. https://ec2.us-east-1.amazonaws.com',
    );
    const imds = configError(() =>
      loadInitConfig([], { ...base, AWS_EC2_METADATA_SERVICE_ENDPOINT: "imds" }),
    );
    expect(imds.message).toBe(
      'AWS_EC2_METADATA_SERVICE_ENDPOINT="imds": expected an http:// or https:// URL, e.g. http://169.254.169.254',
    );
  });

  it("parses sidecar booleans and ports", () => {
    const config = loadSidecarConfig(["--release-on-exit"], { ...base, IPMGR_RELEASE_ON_REMOVE: "false" });
    expect(config.releaseOnExit).toBe(true);
    expect(config.releaseOnRemove).toBe(false);
    expect(config.httpPort).toBe(9180);
  });

  it.each(["yes", "1", "0", "TRUE", "False", ""])(
    "accepts exactly true and false as a boolean, not %j",
    (value) => {
      const error = configError(() => loadSidecarConfig(["--release-on-remove", value], base));
      expect(error.message).toBe(`--release-on-remove=${JSON.stringify(value)}: expected true or false`);
    },
  );

  it.each(["us-east-1", "eu-west-3", "us-gov-west-1", "cn-north-1", "ap-southeast-5", "il-central-1"])(
    "accepts the region %s",
    (region) => {
      expect(loadInitConfig([], { ...base, AWS_REGION: region }).region).toBe(region);
    },
  );

  it.each(["moon", "US-EAST-1", "us-east1", "us-east-1a"])(
    "refuses the region %j with an example",
    (region) => {
      const error = configError(() => loadInitConfig([], { ...base, AWS_REGION: region }));
      expect(error.message).toBe(
        `AWS_REGION=${JSON.stringify(region)}: expected an AWS region such as us-east-1 or eu-west-3`,
      );
    },
  );

  it("takes interface names and prefix patterns", () => {
    const config = loadInitConfig([], {
      ...base,
      IPMGR_INTERFACES: " net1, net* ,abcdefghijklmno,abcdefghijklmno*",
      IPMGR_EXCLUDE_INTERFACES: "eth0,veth*,x*",
    });
    expect(config.interfaces).toEqual(["net1", "net*", "abcdefghijklmno", "abcdefghijklmno*"]);
    expect(config.excludeInterfaces).toEqual(["eth0", "veth*", "x*"]);
  });

  it.each([
    ["init", loadInitConfig],
    ["the sidecar", loadSidecarConfig],
  ])(
    "%s refuses at once (exit 2) an IPMGR_EXCLUDE_INTERFACES that excludes every interface",
    (_command, load) => {
      const error = configError(() => load([], { ...base, IPMGR_EXCLUDE_INTERFACES: "*" }));
      expect(error.exitCode).toBe(ExitCode.config);
      expect(error.message).toBe(
        'IPMGR_EXCLUDE_INTERFACES="*": excludes every interface, so no interface would ever be managed; name only ' +
          "the interfaces to leave out, e.g. lo,eth0 (the default), or list those to manage in IPMGR_INTERFACES",
      );
    },
  );

  it.each([
    ["IPMGR_HTTP_PORT", "x", 'IPMGR_HTTP_PORT="x": expected a whole number from 1 to 65535'],
    [
      "IPMGR_ADDRESS_EVENTS",
      "netlink",
      'IPMGR_ADDRESS_EVENTS="netlink": expected one of: auto, ip-monitor, poll',
    ],
  ])(
    "init refuses the sidecar's %s=%j it shares an env block with (exit 2), as the sidecar does",
    (variable, value, message) => {
      const env = { ...base, [variable]: value };
      const error = configError(() => loadInitConfig([], env));
      expect(error.exitCode).toBe(ExitCode.config);
      expect(error.message).toBe(message);
      expect(configError(() => loadSidecarConfig([], env)).message).toBe(message);
    },
  );

  it("refuses at once (exit 2) an IPMGR_INTERFACES whose every interface is excluded, lo included", () => {
    for (const [env, value, exclude] of [
      [{ IPMGR_INTERFACES: "eth0" }, "eth0", "lo,eth0"],
      [{ IPMGR_INTERFACES: "net1,lo", IPMGR_EXCLUDE_INTERFACES: "net*" }, "net1,lo", "net*"],
    ] as const) {
      const error = configError(() => loadInitConfig([], { ...base, ...env }));
      expect(error.exitCode).toBe(ExitCode.config);
      expect(error.message).toBe(
        `IPMGR_INTERFACES="${value}": every interface it names is excluded (IPMGR_EXCLUDE_INTERFACES="${exclude}", ` +
          "and lo is never managed), so no interface would ever be managed; name the pod's Multus interfaces " +
          "(e.g. net1), or take them out of IPMGR_EXCLUDE_INTERFACES",
      );
    }
    expect(
      loadInitConfig([], { ...base, IPMGR_INTERFACES: "net*", IPMGR_EXCLUDE_INTERFACES: "net1" }).interfaces,
    ).toEqual(["net*"]);
  });

  it.each([
    ["IPMGR_INTERFACES", "a b"],
    ["IPMGR_INTERFACES", "net1,abcdefghijklmnop"],
    ["IPMGR_INTERFACES", "net/1"],
    ["IPMGR_INTERFACES", "net1:0"],
    ["IPMGR_INTERFACES", "n*t"],
    ["IPMGR_INTERFACES", "net**"],
    ["IPMGR_EXCLUDE_INTERFACES", "lo,eth\t0"],
    ["IPMGR_EXCLUDE_INTERFACES", ".."],
  ])("refuses %s=%j naming the bad item and the rules", (variable, value) => {
    const error = configError(() => loadInitConfig([], { ...base, [variable]: value }));
    const bad = value.split(",").find((item) => item !== "net1" && item !== "lo") ?? "";
    expect(error.message).toBe(
      `${variable}=${JSON.stringify(value)}: ${JSON.stringify(bad)} is not an interface name or pattern: Linux names have 1 to 15 characters, none of them whitespace, "/" or ":", and a trailing * matches a prefix (e.g. net*)`,
    );
  });

  it.each(["0.0.0.0/0", "::/0"])(
    "refuses %s among the allowed CIDRs: it would cover node addresses",
    (cidr) => {
      const value = `198.51.100.64/27,${cidr}`;
      const error = configError(() => loadInitConfig([], { IPMGR_ALLOWED_CIDRS: value }));
      expect(error.message).toBe(
        `IPMGR_ALLOWED_CIDRS=${JSON.stringify(value)}: "${cidr}" covers every address and would let multus-ipmgr move any address in the VPC, node addresses included; list only your Multus pod ranges, e.g. 198.51.100.64/27`,
      );
    },
  );

  it.each([
    ["198.51.100.33/27", "198.51.100.32/27"],
    ["2001:db8:100:1::5/64", "2001:db8:100:1::/64"],
  ])("refuses an allowed CIDR with host bits set (%s), suggesting %s", (cidr, network) => {
    const error = configError(() => loadInitConfig([], { IPMGR_ALLOWED_CIDRS: cidr }));
    expect(error.message).toBe(
      `IPMGR_ALLOWED_CIDRS=${JSON.stringify(cidr)}: ${JSON.stringify(cidr)} has host bits set; did you mean ${network}?`,
    );
  });

  it("takes the sidecar's listen address only as an IP address, never a host name", () => {
    expect(loadSidecarConfig([], { ...base, IPMGR_HTTP_HOST: "::" }).httpHost).toBe("::");
    expect(loadSidecarConfig(["--http-host", "192.0.2.10"], base).httpHost).toBe("192.0.2.10");
    const error = configError(() => loadSidecarConfig([], { ...base, IPMGR_HTTP_HOST: "localhost" }));
    expect(error.message).toBe(
      `IPMGR_HTTP_HOST="localhost": expected an IP address, e.g. 0.0.0.0 (every IPv4 address), :: (every address) or one of the pod's addresses`,
    );
  });

  it("is off without IPMGR_ELASTIC_IPS, and takes ADDRESS=ALLOCATION_ID pairs, addresses canonical", () => {
    expect(loadInitConfig([], base).elasticIps).toEqual([]);
    const config = loadSidecarConfig(
      ["--elastic-ips", " 198.51.100.80=eipalloc-0123456789abcdef0, 198.51.100.81 = eipalloc-0a1b2c3d ,"],
      base,
    );
    expect(config.elasticIps).toEqual([
      { address: "198.51.100.80", allocationId: "eipalloc-0123456789abcdef0" },
      { address: "198.51.100.81", allocationId: "eipalloc-0a1b2c3d" },
    ]);
  });

  it.each([
    [
      "198.51.100.80",
      '"198.51.100.80" is not ADDRESS=ALLOCATION_ID; write it like 198.51.100.80=eipalloc-0123456789abcdef0',
    ],
    [
      "web=eipalloc-0123456789abcdef0",
      '"web" is not an IP address; write each mapping like 198.51.100.80=eipalloc-0123456789abcdef0',
    ],
    [
      "2001:db8:100:1::180=eipalloc-0123456789abcdef0",
      "2001:db8:100:1::180 is an IPv6 address, and IPv6 addresses have no Elastic IP; map only IPv4 addresses",
    ],
    ...["eipalloc-0123", "eipalloc-0123456789ABCDEF0", "eipassoc-0123456789abcdef0", "0123456789abcdef0"].map(
      (id) => [
        `198.51.100.80=${id}`,
        `${JSON.stringify(id)} is not an Elastic IP allocation id: eipalloc- followed by 8 or 17 lowercase hexadecimal digits, e.g. eipalloc-0123456789abcdef0 (aws ec2 describe-addresses lists yours)`,
      ],
    ),
    [
      "198.51.100.80=eipalloc-0123456789abcdef0,198.51.100.080=eipalloc-0a1b2c3d",
      '"198.51.100.080" is not an IP address; write each mapping like 198.51.100.80=eipalloc-0123456789abcdef0',
    ],
    [
      "198.51.100.80=eipalloc-0123456789abcdef0,198.51.100.80=eipalloc-0a1b2c3d",
      "198.51.100.80 is mapped twice (to eipalloc-0123456789abcdef0 and eipalloc-0a1b2c3d); an address can have one Elastic IP: keep one",
    ],
    [
      "198.51.100.80=eipalloc-0a1b2c3d,198.51.100.81=eipalloc-0a1b2c3d",
      "eipalloc-0a1b2c3d is mapped twice (to 198.51.100.80 and 198.51.100.81); an Elastic IP can follow one address: keep one",
    ],
  ])("refuses IPMGR_ELASTIC_IPS=%j at start, exit 2, in one sentence", (value, problem) => {
    const error = configError(() => loadSidecarConfig([], { ...base, IPMGR_ELASTIC_IPS: value }));
    expect(error.exitCode).toBe(ExitCode.config);
    expect(error.message).toBe(`IPMGR_ELASTIC_IPS=${JSON.stringify(value)}: ${problem}`);
  });

  it("refuses an Elastic IP for an address outside IPMGR_ALLOWED_CIDRS, naming the flag when it came from one", () => {
    const value = "198.51.100.80=eipalloc-0123456789abcdef0,198.51.100.200=eipalloc-0a1b2c3d";
    for (const load of [loadInitConfig, loadSidecarConfig]) {
      const error = configError(() => load(["--elastic-ips", value], base));
      expect(error.exitCode).toBe(ExitCode.config);
      expect(error.message).toBe(
        `--elastic-ips=${JSON.stringify(value)}: 198.51.100.200 is outside IPMGR_ALLOWED_CIDRS (198.51.100.64/27, 2001:db8:100:1::/64), so multus-ipmgr never moves it and its Elastic IP could not follow it; map an address of your pod ranges, or add its range to IPMGR_ALLOWED_CIDRS`,
      );
    }
  });

  it.each([
    [
      ["--allowed-cidrs"],
      "--allowed-cidrs=(unset): given without a value; write --allowed-cidrs=VALUE or --allowed-cidrs VALUE (the value follows the flag; see --help)",
    ],
    [
      ["--timeout-ms", "--log-level", "debug"],
      "--timeout-ms=(unset): given without a value; write --timeout-ms=120000 or --timeout-ms 120000 (the value follows the flag; see --help)",
    ],
    [
      ["--log-level=debug", "--interfaces"],
      "--interfaces=(unset): given without a value; write --interfaces=VALUE or --interfaces VALUE (the value follows the flag; see --help)",
    ],
  ])('refuses a flag given without its value (%j), never reading it as "true"', (argv, message) => {
    const error = configError(() => loadInitConfig(argv, base));
    expect(error.exitCode).toBe(ExitCode.config);
    expect(error.message).toBe(message);
  });

  it("takes a boolean flag alone as true, last or before another flag", () => {
    expect(loadSidecarConfig(["--release-on-exit"], base).releaseOnExit).toBe(true);
    expect(loadSidecarConfig(["--release-on-exit", "--log-level=warn"], base).releaseOnExit).toBe(true);
    expect(loadSidecarConfig(["--release-on-exit=false"], base).releaseOnExit).toBe(false);
  });

  it.each([
    ["IPMGR_INTERFACES", " , ", "net1,net2 or net*", "every interface not excluded is managed"],
    ["IPMGR_INTERFACES", ",", "net1,net2 or net*", "every interface not excluded is managed"],
    ["IPMGR_INTERFACES", "  ", "net1,net2 or net*", "every interface not excluded is managed"],
    ["IPMGR_EXCLUDE_INTERFACES", " , ,", "net1,net2 or net*", "only lo is excluded"],
    [
      "IPMGR_ELASTIC_IPS",
      " , ",
      "198.51.100.80=eipalloc-0123456789abcdef0",
      "no Elastic IP follows an address",
    ],
  ])(
    "refuses %s=%j, separators only, instead of taking it as empty (exit 2)",
    (variable, value, example, empty) => {
      const error = configError(() => loadSidecarConfig([], { ...base, [variable]: value }));
      expect(error.exitCode).toBe(ExitCode.config);
      expect(error.message).toBe(
        `${variable}=${JSON.stringify(value)}: holds only separators and no item; write the items, e.g. ${example}, or leave it empty (${empty})`,
      );
    },
  );

  it("refuses IPMGR_ALLOWED_CIDRS of separators only, as it refuses an empty list", () => {
    const error = configError(() => loadInitConfig([], { IPMGR_ALLOWED_CIDRS: " , " }));
    expect(error.message).toBe(
      'IPMGR_ALLOWED_CIDRS=" , ": expected at least one CIDR, e.g. 198.51.100.64/27,2001:db8:1::/64',
    );
  });

  it('refuses IPMGR_BRIDGE_DEVICE_INDEXES of separators only; empty stays "the tag decides"', () => {
    const env = { ...base, NODE_NAME: "node-1" };
    expect(loadBridgeConfig([], { ...env, IPMGR_BRIDGE_DEVICE_INDEXES: "" }).deviceIndexes).toEqual([]);
    const error = configError(() => loadBridgeConfig([], { ...env, IPMGR_BRIDGE_DEVICE_INDEXES: " ,, " }));
    expect(error.message).toBe(
      'IPMGR_BRIDGE_DEVICE_INDEXES=" ,, ": holds only separators and no item; write the items, e.g. 1,2, or leave it empty (the no_manage tag decides)',
    );
  });

  it("reads every list with field.list: trimmed items in order, each parsed with the items before it, refused at the first bad one", () => {
    const seen: string[][] = [];
    const schema = field.list<number>({
      example: "1,2",
      emptyMeans: "none",
      item: (item, before) => {
        seen.push(before.map(String));
        return /^\d+$/.test(item) ? { value: Number(item) } : { problem: `${item} is not a number` };
      },
    });
    expect(schema.parse(" 3, 1 ,,2")).toEqual([3, 1, 2]);
    expect(seen).toEqual([[], ["3"], ["3", "1"]]);
    expect(schema.parse("")).toEqual([]);
    expect(schema.safeParse("1,x,y").error?.issues.map((i) => i.message)).toEqual(["x is not a number"]);
    expect(schema.safeParse(" , ").error?.issues[0]?.message).toBe(
      "holds only separators and no item; write the items, e.g. 1,2, or leave it empty (none)",
    );
    const required = field.list<string>({
      example: "a",
      required: "expected one",
      item: (item) => ({ value: item }),
    });
    expect(required.safeParse("").error?.issues[0]?.message).toBe("expected one");
    expect(required.safeParse(" , ").error?.issues[0]?.message).toBe("expected one");
  });

  it("refuses a first backoff delay above its cap (IPMGR_EC2_RETRY_BASE_MS=6000 with the 5000 ms cap), in every command", () => {
    const env = { ...base, NODE_NAME: "node-1", IPMGR_EC2_RETRY_BASE_MS: "6000" };
    const sentence =
      'IPMGR_EC2_RETRY_BASE_MS="6000": must be at most IPMGR_EC2_RETRY_MAX_MS (5000 ms), the cap of every backoff delay; lower it, or raise IPMGR_EC2_RETRY_MAX_MS';
    for (const load of [loadInitConfig, loadSidecarConfig, loadDoctorConfig, loadBridgeConfig]) {
      const error = configError(() => load([], env));
      expect(error.exitCode).toBe(ExitCode.config);
      expect(error.message).toBe(sentence);
    }
    expect(loadInitConfig([], { ...env, IPMGR_EC2_RETRY_MAX_MS: "6000" }).ec2RetryBaseMs).toBe(6000);
    const bridge = configError(() =>
      loadBridgeConfig(["--retry-base-ms", "9000"], { ...base, NODE_NAME: "node-1" }),
    );
    expect(bridge.message).toBe(
      '--retry-base-ms="9000": must be at most IPMGR_BRIDGE_RETRY_MAX_MS (5000 ms), the cap of every backoff delay; lower it, or raise IPMGR_BRIDGE_RETRY_MAX_MS',
    );
  });

  it("enforces the range --help and docs/configuration.md document for every whole-number setting, at both ends", () => {
    const tables = { ...initSettings, ...sidecarSettings };
    const checked: string[] = [];
    for (const setting of Object.values(tables)) {
      const range = settingRange(setting);
      if (range === undefined) continue;
      checked.push(setting.env);
      const unit = setting.unit === undefined ? "" : ` ${setting.unit}`;
      expect(rangeText(setting)).toBe(`${range.min} to ${range.max}${unit}`);
      const load = Object.values(sidecarSettings).includes(setting) ? loadSidecarConfig : loadInitConfig;
      const env = (value: number) => ({
        ...base,
        IPMGR_EC2_RETRY_BASE_MS: "1",
        IPMGR_EC2_RETRY_MAX_MS: "300000",
        [setting.env]: String(value),
      });
      expect(() => load([], env(range.min))).not.toThrow();
      expect(() => load([], env(range.max))).not.toThrow();
      expect(configError(() => load([], env(range.max + 1))).message).toBe(
        `${setting.env}="${range.max + 1}": must be at most ${range.max}${unit}`,
      );
      if (range.min > 0) {
        expect(configError(() => load([], env(range.min - 1))).message).toBe(
          `${setting.env}="${range.min - 1}": must be at least ${range.min}${unit}`,
        );
      }
    }
    expect(checked).toContain("IPMGR_EC2_RETRY_BASE_MS");
    expect(checked).toContain("IPMGR_TIMEOUT_MS");
  });

  it("says a required variable's likely misspelling when one is set", () => {
    const error = configError(() => loadInitConfig([], { IPMGR_ALLOWED_CIDR: "198.51.100.64/27" }));
    expect(error.message).toMatch(
      /^IPMGR_ALLOWED_CIDRS=\(unset\): required \(IPMGR_ALLOWED_CIDR is set: did you mean IPMGR_ALLOWED_CIDRS\?\): /,
    );
  });

  it("takes positional arguments as a mistake", () => {
    expect(() => parseFlags(["init"])).toThrow(ConfigError);
  });

  it("documents every variable in docs/configuration.md", () => {
    const readme = readFileSync("docs/configuration.md", "utf8");
    const missing = Object.values({
      ...initSettings,
      ...sidecarSettings,
      ...doctorSettings,
      ...bridgeSettings,
      ...linksSettings,
    })
      .map((s) => s.env)
      .filter((name) => !readme.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });

  it("docs/metrics.md's bridge section documents every metric the bridge exports", async () => {
    const readme = readFileSync("docs/metrics.md", "utf8");
    const start = readme.indexOf("## bridge");
    const section = readme.slice(start, readme.indexOf("\n## ", start + 1));
    const exported = [...(await new BridgeMetrics().text()).matchAll(/^# TYPE (\S+) /gm)].map(
      (m) => m[1] ?? "",
    );
    expect(exported.length).toBeGreaterThan(10);
    expect(exported.filter((name) => !section.includes(`\`${name}\``))).toEqual([]);
  });

  // The table's cells are the generated block's (test/readme-config.test.ts keeps it in step with the code);
  // this checks where it stands, and that no second copy of it comes back elsewhere in the docs.
  it("docs/configuration.md lists each of the bridge's own settings in one table row, in its bridge section", () => {
    // docs/attach-mode.md opens with a table of attach mode's three variables, that page's own summary.
    const readme = ["README.md", ...readdirSync("docs").map((f) => `docs/${f}`)]
      .filter((f) => f !== "docs/attach-mode.md")
      .map((f) => readFileSync(f, "utf8"))
      .join("\n");
    const page = readFileSync("docs/configuration.md", "utf8");
    const start = page.indexOf("\n## bridge\n");
    const next = page.indexOf("\n## ", start + 1);
    const configuration = page.slice(start, next < 0 ? undefined : next);
    const elsewhere = new Set(
      [...Object.values(podSettings), ...Object.values(sidecarSettings)].map((s) => s.env),
    );
    const own = Object.values(bridgeSettings)
      .map((s) => s.env)
      .filter((env) => !elsewhere.has(env));
    expect(own.length).toBeGreaterThan(10);
    const rows = (text: string, env: string): number =>
      text.split("\n").filter((line) => line.startsWith(`| \`${env}\` |`)).length;
    // doctor reads some of them (NODE_NAME, IPMGR_KUBECONFIG for its node-slice check; attach mode's three for
    // its attach checks): its own table's row says what doctor does with them.
    const doctorToo = new Set(Object.values(doctorSettings).map((s) => s.env));
    expect(own.map((env) => [env, rows(readme, env), rows(configuration, env)])).toEqual(
      own.map((env) => [env, doctorToo.has(env) ? 2 : 1, 1]),
    );
  });
});

describe("IPMGR_* variables no command reads", () => {
  it.each([
    ["IPMGR_INTERFACE", "IPMGR_INTERFACES"],
    ["IPMGR_TIMOUT_MS", "IPMGR_TIMEOUT_MS"],
    ["IPMGR_RELEASE_ON_EXT", "IPMGR_RELEASE_ON_EXIT"],
    ["IPMGR_RELASE_ON_EXIT", "IPMGR_RELEASE_ON_EXIT"],
    ["IPMGR_ALLOWED_CIDR", "IPMGR_ALLOWED_CIDRS"],
    ["IPMGR_LOGLEVEL", "IPMGR_LOG_LEVEL"],
    ["ipmgr_http_port", "IPMGR_HTTP_PORT"],
    ["IPMGR_INTERFACES_EXCLUDE", "IPMGR_EXCLUDE_INTERFACES"],
    ["IPMGR_INTERFACE_EXCLUDE", "IPMGR_EXCLUDE_INTERFACES"],
    ["IPMGR_SIM_PORT_EC2", "IPMGR_SIM_EC2_PORT"],
  ])("finds %s's nearest known name, %s", (name, known) => {
    expect(nearestName(name, KNOWN_VARIABLES)).toBe(known);
  });

  it("suggests nothing for a name unlike any", () => {
    expect(nearestName("IPMGR_COLOUR", KNOWN_VARIABLES)).toBeUndefined();
    expect(nearestName("--frobnicate", ["--json", "--allowed-cidrs"])).toBeUndefined();
  });

  it("measures edit distance as insertions, deletions and substitutions", () => {
    expect(editDistance("", "")).toBe(0);
    expect(editDistance("abc", "")).toBe(3);
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("IPMGR_TIMOUT_MS", "IPMGR_TIMEOUT_MS")).toBe(1);
  });

  it("lists each unknown IPMGR_* variable once, sorted, and leaves known ones and other prefixes alone", () => {
    const env = {
      IPMGR_TIMOUT_MS: "5000",
      IPMGR_INTERFACE: "net1",
      IPMGR_POLL_INTERVAL_MS: "50",
      IPMGR_COLOUR: "blue",
      IPMGR_BENCH_SCENARIOS: "split",
      AWS_REGION: "us-east-1",
      MY_IPMGR_X: "1",
    };
    expect(unknownVariables(env)).toEqual([
      { name: "IPMGR_COLOUR", suggestion: undefined },
      { name: "IPMGR_INTERFACE", suggestion: "IPMGR_INTERFACES" },
      { name: "IPMGR_TIMOUT_MS", suggestion: "IPMGR_TIMEOUT_MS" },
    ]);
    expect(unknownVariables(env).map(unknownVariableSentence)).toEqual([
      "IPMGR_COLOUR is not a variable of multus-ipmgr and changes nothing; check its spelling against docs/configuration.md, or remove it",
      "IPMGR_INTERFACE is not a variable of multus-ipmgr and changes nothing; did you mean IPMGR_INTERFACES?",
      "IPMGR_TIMOUT_MS is not a variable of multus-ipmgr and changes nothing; did you mean IPMGR_TIMEOUT_MS?",
    ]);
  });

  it("proposes IPMGR_EXCLUDE_INTERFACES, not the opposite IPMGR_INTERFACES, for IPMGR_INTERFACES_EXCLUDE", () => {
    expect(unknownVariables({ IPMGR_INTERFACES_EXCLUDE: "eth0" }).map(unknownVariableSentence)).toEqual([
      "IPMGR_INTERFACES_EXCLUDE is not a variable of multus-ipmgr and changes nothing; did you mean IPMGR_EXCLUDE_INTERFACES?",
    ]);
  });

  it("warns once per unknown variable, with the suggestion as a field", () => {
    const lines: [Record<string, unknown>, string][] = [];
    warnUnknownVariables({ IPMGR_TIMOUT_MS: "1", IPMGR_TIMEOUT_MS: "2" }, (f, m) => lines.push([f, m]));
    expect(lines).toEqual([
      [
        { variable: "IPMGR_TIMOUT_MS", didYouMean: "IPMGR_TIMEOUT_MS" },
        "IPMGR_TIMOUT_MS is not a variable of multus-ipmgr and changes nothing; did you mean IPMGR_TIMEOUT_MS?",
      ],
    ]);
  });

  it("knows exactly the IPMGR_* variables of every command's settings, the simulator's and the tooling's", () => {
    const fromTables = new Set(
      [initSettings, sidecarSettings, doctorSettings, bridgeSettings, linksSettings]
        .flatMap((table) => Object.values(table).map((s) => s.env))
        .filter((name) => name.startsWith("IPMGR_")),
    );
    const fromSim = new Set(simUsage.match(/IPMGR_SIM_[A-Z0-9_]+/g) ?? []);
    const tooling = [
      "IPMGR_TEST_SKIP_BUILD",
      "IPMGR_TEST_RUN_TAG",
      "IPMGR_TEST_REQUIRE_SHELLCHECK",
      "IPMGR_IMAGE",
      "IPMGR_IMAGE_TEST_RUN",
      "IPMGR_IMAGE_TEST_KEEP",
    ];
    const expected = [...fromTables, ...fromSim, ...tooling].sort();
    expect(
      [...KNOWN_VARIABLES].sort(),
      "add a new setting's variable to KNOWN_VARIABLES in src/eni/process/known-variables.ts",
    ).toEqual(expected);
  });
});
