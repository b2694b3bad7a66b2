/**
 * The commands docs/install-eks.md and deploy/README.md tell a user to run in the example pods' `app` container
 * (`kubectl -n cnf exec POD -c app -- COMMAND`) work in that container's image, BusyBox
 * (public.ecr.aws/docker/library/busybox:1.37), and print what the docs show under them.
 *
 * The image test pulls no image, so each command runs with the applets of Debian's `busybox` package
 * (scripts/test-image.sh installs it; Debian bookworm has BusyBox 1.35, whose `ip`, `ping` and `wget`
 * take the same options as 1.37's), inside network namespaces standing in for the pods: each pod's net1
 * joins one bridge with the address the docs show for it. The sidecar's /readyz is stood in for by a
 * small HTTP server on 127.0.0.1:9180 of the pod's namespace that answers as the sidecar's probe server
 * does (src/eni/process/probe-server.ts: "ready", then "- ADDRESS on IFACE held by ENI" per address) with
 * the pod's own address: what is tested is the command, not the sidecar (test/image/image.e2e.ts runs the
 * sidecar in the image). The docs' lines of another family or ENI are checked for their shape only.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const DOCS = ["docs/install-eks.md", "deploy/README.md"];
/** The pods the docs exec into, with the net1 address the docs show for each. */
const PODS: Readonly<Record<string, string>> = {
  "cnf-0": "198.51.100.193/24",
  "cnf-1": "198.51.100.194/24",
  "deploy/cnf-worker": "198.51.100.224/24",
  "deploy/cnf-worker-status": "198.51.100.225/24",
};
const PREFIX = `ipmt-${process.pid}-app`;
/** The ENI the stand-in /readyz names, as the docs' example output does. */
const STAND_IN_ENI = "eni-0123456789abcdef0";
const SWITCH = `${PREFIX}-sw`;

interface DocCommand {
  readonly file: string;
  readonly pod: string;
  readonly argv: string[];
  /** The comment lines under the command in the docs: its expected output. */
  readonly expected: string[];
}

/** Every `kubectl -n cnf exec POD -c app -- COMMAND` line of the docs, with the comment lines under it. */
function docCommands(): DocCommand[] {
  return DOCS.flatMap((file) => {
    const lines = readFileSync(file, "utf8").split("\n");
    return lines.flatMap((line, i) => {
      const match = /^kubectl -n cnf exec (\S+) -c app -- (.+?)(?:\s+#.*)?$/.exec(line);
      if (match === null) return [];
      const expected: string[] = [];
      for (let j = i + 1; j < lines.length && lines[j]?.startsWith("# ") === true; j++) {
        expected.push((lines[j] ?? "").slice(2));
      }
      return [{ file, pod: match[1] ?? "", argv: (match[2] ?? "").split(/\s+/), expected }];
    });
  });
}

const commands = docCommands();
const nsOf = (pod: string): string => `${PREFIX}-${Object.keys(PODS).indexOf(pod)}`;
const servers: ChildProcess[] = [];

async function busybox(pod: string, argv: readonly string[]) {
  try {
    const { stdout, stderr } = await run("ip", ["netns", "exec", nsOf(pod), "busybox", ...argv], {
      timeout: 20_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

async function removeLab(): Promise<void> {
  for (const server of servers.splice(0)) server.kill("SIGTERM");
  const { stdout } = await run("ip", ["netns", "list"]);
  for (const ns of stdout.split("\n").map((l) => l.split(" ")[0] ?? "")) {
    if (ns.startsWith(`${PREFIX}-`)) await run("ip", ["netns", "del", ns]);
  }
}

describe("the commands the docs run in the app container (BusyBox)", () => {
  beforeAll(async () => {
    await run("busybox", ["true"]).catch((error: unknown) => {
      throw new Error(
        `Debian's busybox package is needed (apt-get install busybox; scripts/test-image.sh installs it): ${String(error)}`,
      );
    });
    try {
      await run("ip", ["netns", "add", SWITCH]);
      await run("ip", ["-n", SWITCH, "link", "add", "br0", "type", "bridge"]);
      await run("ip", ["-n", SWITCH, "link", "set", "br0", "up"]);
      for (const [i, [pod, address]] of Object.entries(PODS).entries()) {
        const ns = nsOf(pod);
        await run("ip", ["netns", "add", ns]);
        await run("ip", ["-n", ns, "link", "set", "lo", "up"]);
        await run("ip", [
          "link",
          "add",
          "net1",
          "netns",
          ns,
          "type",
          "veth",
          "peer",
          "name",
          `p${i}`,
          "netns",
          SWITCH,
        ]);
        await run("ip", ["-n", SWITCH, "link", "set", `p${i}`, "master", "br0", "up"]);
        await run("ip", ["-n", ns, "addr", "add", address, "dev", "net1"]);
        await run("ip", ["-n", ns, "link", "set", "net1", "up"]);
        const server = spawn(
          "ip",
          [
            "netns",
            "exec",
            ns,
            process.execPath,
            "-e",
            `require("node:http").createServer((q, r) => r.end("ready\\n- ${address.split("/")[0]} on net1 held by ${STAND_IN_ENI}\\n")).listen(9180, "127.0.0.1", () => console.log("up"))`,
          ],
          { stdio: ["ignore", "pipe", "ignore"] },
        );
        servers.push(server);
        await new Promise<void>((resolve, reject) => {
          server.stdout?.once("data", () => resolve());
          server.once("exit", (code) => reject(new Error(`the stand-in /readyz server exited ${code}`)));
        });
      }
    } catch (error) {
      await removeLab();
      throw error;
    }
  }, 60_000);
  afterAll(removeLab);

  it("finds the commands: ip, ping and wget, in both docs, each in a pod the lab has", () => {
    expect(new Set(commands.map((c) => c.file))).toEqual(new Set(DOCS));
    expect(new Set(commands.map((c) => c.argv[0]))).toEqual(new Set(["ip", "ping", "wget"]));
    expect(commands.filter((c) => !(c.pod in PODS)).map((c) => `${c.file}: ${c.pod}`)).toEqual([]);
  });

  it("BusyBox's ip refuses -br, which the docs therefore never use", async () => {
    const result = await busybox("cnf-0", ["ip", "-br", "addr", "show", "net1"]);
    expect(result.code).not.toBe(0);
    expect(commands.filter((c) => c.argv.includes("-br"))).toEqual([]);
  });

  it("each command exits 0 in BusyBox, in the docs' order, and prints the output the docs show under it", async () => {
    const failures: string[] = [];
    for (const command of commands) {
      const result = await busybox(command.pod, command.argv);
      const label = `${command.file}: ${command.pod}: ${command.argv.join(" ")}`;
      if (result.code !== 0) failures.push(`${label}: exit ${result.code}: ${result.stderr.trim()}`);
      const printed = result.stdout.split("\n").map((l) => l.trimEnd());
      for (const line of command.expected) {
        // The first line of `ip addr show` names the interface's index, peer and MTU, which differ between
        // a lab's veth and a node's ipvlan: its shape is checked; every other line word for word.
        const ipv6Readiness = /^- \S*:\S* on net1 held by eni-[0-9a-f]+$/.test(line);
        const shown = /^\d+: net1@/.test(line)
          ? printed.some((p) => /^\d+: net1@\S+: <[A-Z_,-]+> mtu \d+ qdisc \S+ qlen \d+$/.test(p))
          : ipv6Readiness || printed.includes(line.trimEnd());
        if (!shown) failures.push(`${label}: does not print "${line}"; it printed:\n${result.stdout}`);
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
