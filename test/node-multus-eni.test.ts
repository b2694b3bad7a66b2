/**
 * deploy/node/multus-eni.sh, run for real by bash against stand-ins: `curl` answers as IMDS would, `aws`
 * records each call and answers as EC2 would (or fails where a test says), and `sysctl`, `networkctl` and
 * `ip` record their arguments. The script's files go under a temporary directory that stands for /
 * (MULTUS_ENI_ROOT). No packet leaves the machine: the stand-ins are shell scripts on the PATH.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { makeTempDir, removeTempDir } from "./helpers/temp-dirs.js";

const SCRIPT = resolve(import.meta.dirname, "..", "deploy", "node", "multus-eni.sh");
const TAG = "multus-ipmgr.io/multus-eni-security-group";

const FAKE_CURL = `#!/bin/bash
for arg in "$@"; do case "$arg" in http://*) url="$arg" ;; esac; done
case "$url" in
  */api/token) printf token ;;
  */meta-data/instance-id) printf i-0123456789abcdef0 ;;
  */meta-data/placement/availability-zone) printf us-east-1a ;;
  */meta-data/placement/region)
    [ "\${FAKE_REGION_STATUS:-200}" = 200 ] || exit 22
    printf %s "\${FAKE_REGION-us-east-1}" ;;
  */meta-data/mac) printf 02:00:00:00:00:01 ;;
  */meta-data/network/interfaces/macs/02:00:00:00:00:01/vpc-id) printf vpc-0123456789abcdef0 ;;
  *) exit 22 ;;
esac
`;

const FAKE_AWS = `#!/bin/bash
printf '%s\\n' "$*" >>"$FAKE_LOG"
fail() { echo "An error occurred ($1) when calling the $2 operation" >&2; exit 254; }
case "$2" in
  describe-subnets) printf '%b' "\${FAKE_SUBNETS-subnet-0aaaaaaaaaaaaaaaa\\tsg-0cccccccccccccccc\\n}" ;;
  create-network-interface) printf 'eni-0new00000000000000\\t02:00:00:00:00:02\\n' ;;
  attach-network-interface)
    [ "\${FAKE_FAIL:-}" != attach ] || fail AttachmentLimitExceeded AttachNetworkInterface
    [ "\${FAKE_FAIL:-}" != hang ] || exec sleep 120
    mkdir -p "$MULTUS_ENI_ROOT/sys/class/net/eth1"
    echo eni-attach-0new0000000000000 ;;
  modify-network-interface-attribute)
    [ "\${FAKE_FAIL:-}" != modify ] || fail RequestLimitExceeded ModifyNetworkInterfaceAttribute ;;
esac
`;

const RECORDER = `#!/bin/bash
printf '%s %s\\n' "$(basename "$0")" "$*" >>"$FAKE_LOG"
`;

interface Run {
  readonly status: number | null;
  readonly stderr: string;
  /** Each call of the stand-ins, in order: "ec2 describe-subnets ...", "sysctl -q -w ...". */
  readonly calls: string[];
  readonly root: string;
}

let dir: string | undefined;
afterEach(() => {
  removeTempDir(dir);
  dir = undefined;
});

interface Prepared {
  readonly root: string;
  readonly log: string;
  readonly env: NodeJS.ProcessEnv;
}

/** The stand-ins on a PATH, the root directory and the call log, in a new temporary directory. */
function prepare(env: Record<string, string>, osRelease: string): Prepared {
  dir = makeTempDir("ipmgr-node-");
  const bin = join(dir, "bin");
  const root = join(dir, "root");
  for (const d of [bin, join(root, "etc", "systemd", "network"), join(root, "etc", "sysctl.d")]) {
    mkdirSync(d, { recursive: true });
  }
  writeFileSync(join(root, "etc", "os-release"), osRelease);
  const tools: Record<string, string> = {
    curl: FAKE_CURL,
    aws: FAKE_AWS,
    sysctl: RECORDER,
    networkctl: RECORDER,
    ip: RECORDER,
  };
  for (const [name, text] of Object.entries(tools)) {
    writeFileSync(join(bin, name), text);
    chmodSync(join(bin, name), 0o755);
  }
  const log = join(dir, "calls.log");
  writeFileSync(log, "");
  return {
    root,
    log,
    env: { PATH: `${bin}:${process.env.PATH ?? ""}`, MULTUS_ENI_ROOT: root, FAKE_LOG: log, ...env },
  };
}

const callsIn = (log: string): string[] =>
  readFileSync(log, "utf8")
    .split("\n")
    .filter((line) => line !== "");

function run(
  env: Record<string, string> = {},
  osRelease = 'NAME="Amazon Linux"\nID="amzn"\nVERSION_ID="2023"\n',
): Run {
  const { root, log, env: scriptEnv } = prepare(env, osRelease);
  const result = spawnSync("bash", [SCRIPT], {
    encoding: "utf8",
    env: scriptEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { status: result.status, stderr: result.stderr, calls: callsIn(log), root };
}

const ec2Calls = (r: Run): string[] =>
  r.calls.filter((c) => c.startsWith("ec2 ")).map((c) => c.split(" ")[1] ?? "");

describe("deploy/node/multus-eni.sh", () => {
  it("finds the zone's Multus subnet and its security group by tag, creates, attaches and keeps the ENI", () => {
    const r = run();
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(ec2Calls(r)).toEqual([
      "describe-subnets",
      "create-network-interface",
      "attach-network-interface",
      "modify-network-interface-attribute",
    ]);
    expect(r.calls[0]).toContain(
      `--filters Name=vpc-id,Values=vpc-0123456789abcdef0 Name=availability-zone,Values=us-east-1a Name=tag-key,Values=${TAG}`,
    );
    expect(r.calls[1]).toContain("--subnet-id subnet-0aaaaaaaaaaaaaaaa --groups sg-0cccccccccccccccc");
    expect(r.calls.find((c) => c.startsWith("ec2 modify-network-interface-attribute"))).toContain(
      "AttachmentId=eni-attach-0new0000000000000,DeleteOnTermination=true",
    );
    expect(readFileSync(join(r.root, "etc", "systemd", "network", "10-multus.link"), "utf8")).toBe(
      "[Match]\nMACAddress=02:00:00:00:00:02\n[Link]\nName=eth1\n",
    );
    expect(r.calls).toContain("ip link set dev eth1 up");
  });

  it("deletes the ENI it created when the attach fails, and exits with the AWS CLI's status", () => {
    const r = run({ FAKE_FAIL: "attach" });
    expect(r.status).toBe(254);
    expect(ec2Calls(r)).toEqual([
      "describe-subnets",
      "create-network-interface",
      "attach-network-interface",
      "delete-network-interface",
    ]);
    expect(r.calls.at(-1)).toBe("ec2 delete-network-interface --network-interface-id eni-0new00000000000000");
    expect(r.stderr).toContain(
      "multus-eni: deleted eni-0new00000000000000, which this boot created, after the failure above",
    );
  });

  it("detaches and deletes the ENI when DeleteOnTermination cannot be set after the attach", () => {
    const r = run({ FAKE_FAIL: "modify" });
    expect(r.status).toBe(254);
    expect(ec2Calls(r).slice(3)).toEqual([
      "modify-network-interface-attribute",
      "detach-network-interface",
      "wait",
      "delete-network-interface",
    ]);
    expect(r.calls).toContain(
      "ec2 detach-network-interface --attachment-id eni-attach-0new0000000000000 --force",
    );
  });

  it("deletes the ENI it created when the boot is stopped by SIGTERM during the attach", async () => {
    const { log, env } = prepare({ FAKE_FAIL: "hang" }, 'ID="amzn"\nVERSION_ID="2023"\n');
    // A process group of its own: the SIGTERM goes to the script and the attach it waits for, as systemd
    // sends it to every process of the unit.
    const child = spawn("bash", [SCRIPT], { env, detached: true, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
    try {
      await vi.waitFor(() => expect(callsIn(log).at(-1)).toMatch(/^ec2 attach-network-interface /), {
        timeout: 20_000,
        interval: 50,
      });
      process.kill(-(child.pid as number), "SIGTERM");
      expect(await exited).toBe(143);
    } finally {
      if (child.exitCode === null && child.signalCode === null)
        process.kill(-(child.pid as number), "SIGKILL");
    }
    expect(callsIn(log).at(-1)).toBe(
      "ec2 delete-network-interface --network-interface-id eni-0new00000000000000",
    );
    expect(stderr).toContain("multus-eni: deleted eni-0new00000000000000, which this boot created");
  });

  it("stops before any EC2 call when IMDS gives an empty region", () => {
    const r = run({ FAKE_REGION: "" });
    expect(r.status).toBe(1);
    expect(ec2Calls(r)).toEqual([]);
    expect(r.stderr).toBe(
      "multus-eni: IMDS gave an empty AWS_REGION: the AWS CLI cannot be pointed at this node's account and region\n",
    );
  });

  it("stops before any EC2 call when IMDS does not answer the region (the error is not masked)", () => {
    const r = run({ FAKE_REGION_STATUS: "404" });
    expect(r.status).toBe(1);
    expect(ec2Calls(r)).toEqual([]);
    expect(r.stderr).toContain("multus-eni: IMDS did not answer meta-data/placement/region\n");
  });

  it("refuses Amazon Linux 2 in one sentence naming the AMI type, before IMDS or EC2", () => {
    const r = run({}, 'NAME="Amazon Linux"\nID="amzn"\nVERSION_ID="2"\n');
    expect(r.status).toBe(1);
    expect(r.calls).toEqual([]);
    expect(r.stderr).toBe(
      "multus-eni: this node runs amzn 2 (/etc/os-release), not Amazon Linux 2023 (amzn 2023): multus-eni.sh needs AL2023's systemd-networkd; give the node group the AMI type AL2023_x86_64_STANDARD (or AL2023_ARM_64_STANDARD), amiFamily: AmazonLinux2023 with eksctl\n",
    );
  });

  it("names the tag to set when no subnet of the zone carries it, and creates nothing", () => {
    const r = run({ FAKE_SUBNETS: "" });
    expect(r.status).toBe(1);
    expect(ec2Calls(r)).toEqual(["describe-subnets"]);
    expect(r.stderr).toContain(`no subnet of vpc-0123456789abcdef0 in us-east-1a is tagged ${TAG}`);
  });

  it("refuses two tagged subnets in one zone, naming both", () => {
    const r = run({ FAKE_SUBNETS: "subnet-0a\\tsg-0c\\nsubnet-0b\\tsg-0c\\n" });
    expect(r.status).toBe(1);
    expect(ec2Calls(r)).toEqual(["describe-subnets"]);
    expect(r.stderr).toContain(
      `several subnets of vpc-0123456789abcdef0 in us-east-1a are tagged ${TAG} (subnet-0a,subnet-0b)`,
    );
  });

  it("refuses a tag value that is not a security group id", () => {
    const r = run({ FAKE_SUBNETS: "subnet-0a\\tmy-group\\n" });
    expect(r.status).toBe(1);
    expect(ec2Calls(r)).toEqual(["describe-subnets"]);
    expect(r.stderr).toContain('subnet-0a on multus-ipmgr.io/multus-eni-security-group says "my-group"');
    expect(existsSync(join(r.root, "etc", "systemd", "network", "10-multus.link"))).toBe(false);
  });
});
