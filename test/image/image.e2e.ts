/**
 * The built image, run as a user would run it: read-only root file system with no writable /tmp (as
 * readOnlyRootFilesystem gives in Kubernetes), every capability dropped, no new privileges, its own
 * non-root user. `init` and `sidecar` run in containers that join a lab's pod network namespace, against the
 * simulator in the lab's own namespace, as the pod's containers share the pod's namespace on a node;
 * `doctor` runs through `podman exec` in the sidecar's container, as `kubectl exec` runs it.
 * Run by `npm run test:image` (scripts/test-image.sh), which builds the image and names it in IPMGR_IMAGE.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { collect, Lab, type LabPodSpec, labUnavailableReason, removeStaleLabs } from "../helpers/netns.js";
import { eventually, holds, ready, SidecarProcess } from "../helpers/sidecar-lab.js";
import { makeTempDir, removeTempDir } from "../helpers/temp-dirs.js";
import { ENI, floatingPairWorld, MAC, NODE1, NODE2 } from "../helpers/worlds.js";

const run = promisify(execFile);
const IMAGE = process.env.IPMGR_IMAGE ?? "";
const RUN_ID = process.env.IPMGR_IMAGE_TEST_RUN ?? String(process.pid);
const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };

/** Podman as scripts/test-image.sh runs it (see there why). */
const PODMAN = ["--runtime", "runc", "--cgroup-manager=cgroupfs"];
/** How a user runs it: the restrictions of a locked-down pod. */
const LOCKED_DOWN = [
  "--rm",
  "--pull=never",
  "--read-only",
  "--read-only-tmpfs=false",
  "--cap-drop=ALL",
  "--security-opt=no-new-privileges",
  "--ulimit=nofile=1024:1024",
  "--ulimit=nproc=1024:1024",
  `--label=io.multus-ipmgr.image-test=${RUN_ID}`,
];

const ALLOWED_CIDRS = "198.51.100.64/26,2001:db8:100:1::100/120";
const FLOAT4 = "198.51.100.80";

const unavailable =
  IMAGE === ""
    ? "IPMGR_IMAGE names no image: run npm run test:image, which builds it"
    : labUnavailableReason();
if (unavailable !== undefined) console.warn(`image tests skipped: ${unavailable}`);

async function podman(...args: string[]): Promise<string> {
  const { stdout } = await run("podman", [...PODMAN, ...args], { maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/** `podman run` of the image, in the given network namespace (or none), with the lab's environment. */
function runImage(
  args: readonly string[],
  options: { netns?: string; env?: Record<string, string>; name?: string; extra?: string[] } = {},
): ChildProcess {
  const env = Object.entries(options.env ?? {})
    .filter(([key]) => key !== "PATH")
    .map(([key, value]) => `--env=${key}=${value}`);
  return spawn(
    "podman",
    [
      ...PODMAN,
      "run",
      ...LOCKED_DOWN,
      `--network=${options.netns === undefined ? "none" : `ns:/run/netns/${options.netns}`}`,
      ...(options.name === undefined ? [] : [`--name=${options.name}`]),
      ...(options.extra ?? []),
      ...env,
      IMAGE,
      ...args,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
}

function netnsOf(lab: Lab, pod: string): string {
  const ns = lab.pods.get(pod)?.ns;
  if (ns === undefined) throw new Error(`no pod ${pod} in the lab`);
  return ns;
}

const podA = (addresses: string[]): LabPodSpec => ({
  name: "a",
  instanceId: NODE1,
  interfaces: [{ name: "net1", mac: MAC.node1A1, addresses }],
});
const podB = (addresses: string[]): LabPodSpec => ({
  name: "b",
  instanceId: NODE2,
  interfaces: [{ name: "net1", mac: MAC.node2A1, addresses }],
});

describe.skipIf(unavailable !== undefined)("the image, run as a user would", () => {
  let lab: Lab | undefined;
  let tmp: string | undefined;
  const containers: string[] = [];

  beforeAll(async () => {
    await removeStaleLabs();
    tmp = makeTempDir("ipmgr-cli-");
  });
  afterEach(async () => {
    for (const name of containers.splice(0)) await podman("rm", "-f", "-t", "0", name).catch(() => "");
    await lab?.close();
    lab = undefined;
  });
  afterAll(() => removeTempDir(tmp));

  it("is labelled, runs as uid 1000 by number (runAsNonRoot can verify it) and ships no source maps", async () => {
    const [config] = JSON.parse(await podman("image", "inspect", IMAGE)) as {
      Config: { User: string; Labels: Record<string, string> };
    }[];
    expect(config?.Config.User).toBe("1000:1000");
    expect(config?.Config.Labels).toMatchObject({
      "org.opencontainers.image.title": "multus-ipmgr",
      "org.opencontainers.image.licenses": "Apache-2.0",
      "org.opencontainers.image.version": version,
    });
    expect(config?.Config.Labels["org.opencontainers.image.description"]).toMatch(/Multus/);
    const listing = await collect(
      spawn(
        "podman",
        [
          ...PODMAN,
          "run",
          ...LOCKED_DOWN,
          "--network=none",
          "--entrypoint=node",
          IMAGE,
          "-e",
          `const fs = require("node:fs");
           console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(),
             files: fs.readdirSync("/app", { recursive: true }).sort() }));`,
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      ),
    );
    expect(listing.stderr).toBe("");
    const seen = JSON.parse(listing.stdout) as { uid: number; gid: number; files: string[] };
    expect(seen.uid).toBe(1000);
    expect(seen.gid).toBe(1000);
    expect(seen.files).toContain("dist/multus-ipmgr.mjs");
    expect(seen.files).toContain("dist/multus-ipmgr.cjs");
    expect(seen.files).toContain("dist/cli.cjs.cache");
    expect(seen.files).toContain("dist/bridge.cjs.cache");
    expect(seen.files).toContain("dist/sim.mjs");
    expect(seen.files).toContain("examples/world-demo.yaml");
    expect(seen.files).toContain("cni/multus-ipmgr");
    expect(seen.files).toContain("cni/install.sh");
    expect(seen.files.filter((f) => f.endsWith(".map"))).toEqual([]);
  });

  it("--help lists the commands and exits 0; --version prints package.json's version", async () => {
    const help = await collect(runImage([]));
    expect(help.code).toBe(0);
    for (const command of ["init", "sidecar", "sim"]) expect(help.stdout).toContain(command);
    const explicit = await collect(runImage(["--help"]));
    expect(explicit.code).toBe(0);
    expect(explicit.stdout).toBe(help.stdout);
    const shown = await collect(runImage(["--version"]));
    expect(shown).toMatchObject({ code: 0, stdout: `multus-ipmgr ${version}\n`, stderr: "" });
    // kubectl debug ... -- multus-ipmgr ... replaces the entrypoint: the command is on the PATH.
    const onPath = await collect(runImage(["--version"], { extra: ["--entrypoint=multus-ipmgr"] }));
    expect(onPath).toMatchObject({ code: 0, stdout: `multus-ipmgr ${version}\n`, stderr: "" });
  });

  it("starts from V8's code cache made for its own node, and the normal way without it", async () => {
    const debug = { IPMGR_LOG_LEVEL: "debug" };
    const fallback = (stdout: string) =>
      stdout.split("\n").filter((line) => line.includes('"msg":"starting without the code cache"'));
    // Each cache's stamp names the runtime's own node and architecture.
    for (const cache of ["cli.cjs.cache", "bridge.cjs.cache"]) {
      const stamp = await collect(
        runImage(
          [
            "-e",
            `const fs = require("node:fs");
             const head = fs.readFileSync("/app/dist/${cache}").subarray(0, 1000).toString("latin1");
             const stamp = JSON.parse(head.slice(0, head.indexOf("\\n")));
             console.log(JSON.stringify({ stamp, node: process.version, arch: process.arch }));`,
          ],
          { extra: ["--entrypoint=node"] },
        ),
      );
      expect(stamp.stderr).toBe("");
      const seen = JSON.parse(stamp.stdout) as {
        stamp: { node: string; arch: string; training?: string };
        node: string;
        arch: string;
      };
      expect(seen.stamp).toMatchObject({ node: seen.node, arch: seen.arch });
      // The CLI's was written after the training run of init (scripts/code-cache/code-cache-training.ts), in the image.
      if (cache === "cli.cjs.cache") {
        expect(seen.stamp.training).toBe(
          "a fresh start of init (AssignIpv6Addresses, AssignPrivateIpAddresses, DescribeNetworkInterfaces)",
        );
      } else {
        expect(seen.stamp.training).toBeUndefined();
      }
    }
    // The entrypoint and the command on the PATH use them: no fallback line even at debug level.
    for (const extra of [[], ["--entrypoint=multus-ipmgr"]]) {
      for (const command of ["init", "bridge"]) {
        const cached = await collect(runImage([command, "--help"], { env: debug, extra }));
        expect(cached.code).toBe(0);
        expect(cached.stderr).toBe("");
        expect(fallback(cached.stdout)).toEqual([]);
        expect(cached.stdout).toContain(`usage: multus-ipmgr ${command} [flags]`);
      }
    }
    // A cache that does not fit (here: an empty file mounted over it) starts the normal way, with one line.
    if (tmp === undefined) throw new Error("no temp dir");
    const empty = join(tmp, "empty-cache");
    writeFileSync(empty, "");
    chmodSync(empty, 0o644);
    const spoilt = await collect(
      runImage(["--version"], { env: debug, extra: [`--volume=${empty}:/app/dist/cli.cjs.cache:ro`] }),
    );
    expect(spoilt.code).toBe(0);
    expect(fallback(spoilt.stdout)).toHaveLength(1);
    expect(spoilt.stdout).toContain("/app/dist/cli.cjs.cache is not a code cache of multus-ipmgr");
    expect(spoilt.stdout).toContain(`multus-ipmgr ${version}\n`);
    // The ESM entry runs as it always did.
    const plain = await collect(
      runImage(["/app/dist/multus-ipmgr.mjs", "--version"], { extra: ["--entrypoint=node"] }),
    );
    expect(plain).toMatchObject({ code: 0, stdout: `multus-ipmgr ${version}\n`, stderr: "" });
  });

  it("installs its CNI plugin into a host directory as the bridge's init container does, and the plugin runs there without the image", async () => {
    const hostBin = join(tmp ?? "", "opt-cni-bin");
    mkdirSync(hostBin);
    const installed = await collect(
      runImage(["/app/cni/install.sh"], {
        extra: ["--entrypoint=sh", "--user=0:0", `--volume=${hostBin}:/host/opt/cni/bin`],
      }),
    );
    expect(installed).toMatchObject({
      code: 0,
      stdout: "cni-install: installed /host/opt/cni/bin/multus-ipmgr\n",
      stderr: "",
    });
    const plugin = join(hostBin, "multus-ipmgr");
    expect(statSync(plugin).mode & 0o777).toBe(0o755);
    // Static: it runs on this machine as on a node, with nothing of the image.
    const version = await collect(
      spawn(plugin, [], { env: { CNI_COMMAND: "VERSION" }, stdio: ["ignore", "pipe", "pipe"] }),
    );
    expect(version).toMatchObject({
      code: 0,
      stdout: '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}\n',
      stderr: "",
    });
  });

  it("sim starts on the example world shipped in the image and stops on SIGTERM", async () => {
    const name = `ipmgr-image-test-${RUN_ID}-sim`;
    containers.push(name);
    const sim = runImage(["sim", "--world", "/app/examples/world-demo.yaml"], { name });
    const result = collect(sim, 60_000);
    let out = "";
    sim.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    await eventually(() => out.includes("\n"), "the simulator's ready line", 30_000);
    expect(JSON.parse(out.split("\n")[0] ?? "")).toMatchObject({ ready: true });
    await podman("stop", "-t", "10", name);
    expect((await result).code).toBe(0);
  });

  it("init in a pod's network namespace assigns the pod's addresses to its ENI and exits 0", async () => {
    lab = await Lab.start(floatingPairWorld(), [podA(["198.51.100.70/25", "2001:db8:100:1::170/64"])]);
    const result = await collect(
      runImage(["init"], {
        netns: netnsOf(lab, "a"),
        env: lab.env("a", { IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS }),
      }),
      60_000,
    );
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const eni = await lab.eni(ENI.node1A1);
    expect(eni.ipv4s).toContain("198.51.100.70");
    expect(eni.ipv6s).toContain("2001:db8:100:1::170");
  });

  it("init refuses an address outside the allowed CIDRs with exit 6 and writes why to /dev/termination-log", async () => {
    lab = await Lab.start(floatingPairWorld(), [podA(["198.51.100.20/25"])]);
    // The kubelet bind-mounts a writable file there; the container cannot create it on a read-only root.
    const log = join(tmp ?? "", "termination-log");
    writeFileSync(log, "");
    chmodSync(log, 0o666); // the container's user is uid 1000
    const env = lab.env("a", { IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS });
    delete env.IPMGR_TERMINATION_LOG;
    const result = await collect(
      runImage(["init"], { netns: netnsOf(lab, "a"), env, extra: [`--volume=${log}:/dev/termination-log`] }),
      60_000,
    );
    expect(result.code).toBe(6);
    const sentence =
      "address 198.51.100.20 on net1 is outside the allowed CIDRs [198.51.100.64/26, 2001:db8:100:1::100/120]; add its range to IPMGR_ALLOWED_CIDRS if it is a pod address";
    expect(result.stderr).toContain(sentence);
    expect(readFileSync(log, "utf8")).toContain(sentence);
    expect(await lab.calls()).toEqual([]);
  });

  it("sidecar watches through ip monitor, turns ready, answers doctor through exec, follows a floating address to the other pod, and stops with 0", async () => {
    lab = await Lab.start(floatingPairWorld(), [
      podA(["198.51.100.70/25", `${FLOAT4}/25`]),
      podB(["198.51.100.90/25"]),
    ]);
    const l = lab;
    const sidecar = (pod: string): SidecarProcess => {
      const name = `ipmgr-image-test-${RUN_ID}-${pod}`;
      containers.push(name);
      return new SidecarProcess(
        runImage(["sidecar"], {
          name,
          netns: netnsOf(l, pod),
          env: l.env(pod, {
            IPMGR_ALLOWED_CIDRS: ALLOWED_CIDRS,
            IPMGR_DRIFT_CHECK_INTERVAL_MS: "200",
            IPMGR_CONFIRM_INTERVAL_MS: "20",
          }),
        }),
      );
    };
    const a = sidecar("a");
    const b = sidecar("b");
    await eventually(
      async () => (await ready(l, "a")) && (await ready(l, "b")),
      "both sidecars ready",
      60_000,
    );
    // iproute2 in the image works for an unprivileged user with no capability: events, not polling.
    for (const s of [a, b]) {
      expect(s.logs.find((line) => line.addressEvents !== undefined)?.addressEvents).toBe("ip-monitor");
    }
    expect(await holds(l, ENI.node1A1, FLOAT4)).toBe(true);

    // kubectl exec POD -c multus-ipmgr -- multus-ipmgr doctor: the container's own environment, its
    // namespace's interfaces and /sys/class/net. This world has no subnet CIDR reservation: those are its
    // only problems, exit 10.
    const doctor = await run("podman", [
      ...PODMAN,
      "exec",
      containers[0] ?? "",
      "multus-ipmgr",
      "doctor",
      "--json",
    ]).then(
      (r) => ({ code: 0, stdout: r.stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
    );
    const report = JSON.parse(doctor.stdout) as {
      exitCode: number;
      checks: { name: string; status: string; detail: string }[];
    };
    expect(doctor.code).toBe(report.exitCode);
    expect(report.exitCode).toBe(10);
    expect(report.checks.filter((c) => c.status === "problem").map((c) => c.name)).toEqual([
      "reservation",
      "reservation",
    ]);
    const statusOf = (name: string) => report.checks.filter((c) => c.name === name).map((c) => c.status);
    for (const name of ["interfaces", "link", "imds", "instance", "eni-match", "addresses", "ip-command"]) {
      expect({ name, statuses: statusOf(name) }).toEqual({ name, statuses: statusOf(name).map(() => "ok") });
      expect(statusOf(name).length).toBeGreaterThan(0);
    }

    await l.removeAddress("a", "net1", `${FLOAT4}/25`);
    await l.addAddress("b", "net1", `${FLOAT4}/25`);
    await eventually(
      async () => (await holds(l, ENI.node2A1, FLOAT4)) && !(await holds(l, ENI.node1A1, FLOAT4)),
      `${FLOAT4} moved to ${ENI.node2A1}`,
      30_000,
    );
    await eventually(() => ready(l, "b"), "pod b ready holding the floating address", 30_000);

    await podman("stop", "-t", "15", ...containers);
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(await b.exited).toEqual({ code: 0, signal: null });
    expect(a.stderr).toBe("");
    expect(b.stderr).toBe("");
  });
});
