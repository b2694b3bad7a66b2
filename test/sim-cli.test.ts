import { describe, expect, it } from "vitest";
import type { Clock } from "../src/eni/process/clock.js";
import { parseSimArgs } from "../src/sim/cli-args.js";
import { loadWorldFile, startSimulator } from "../src/sim/index.js";
import { main, type SimOutput } from "../src/sim/main.js";
import { readyLine } from "../src/sim/ready-line.js";
import { imdsEndpointOf } from "./helpers/sim-fixtures.js";

/** The command's stdout and stderr, captured instead of reaching the terminal. */
function captureOutput(): SimOutput & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, stdout: (text) => out.push(text), stderr: (text) => err.push(text) };
}

describe("sim command-line arguments", () => {
  it("parses flags in both spellings, with defaults", () => {
    expect(parseSimArgs(["--world", "w.yaml", "--ec2-port=4566", "--verbose"], {})).toEqual({
      kind: "run",
      args: {
        world: "w.yaml",
        host: "127.0.0.1",
        ec2Port: 4566,
        controlPort: 0,
        imdsPortBase: 0,
        kubePort: 0,
        verbose: true,
      },
    });
  });

  it("falls back to IPMGR_SIM_* variables, flags winning", () => {
    const env = { IPMGR_SIM_WORLD: "env.yaml", IPMGR_SIM_HOST: "0.0.0.0", IPMGR_SIM_IMDS_PORT_BASE: "18000" };
    expect(parseSimArgs([], env)).toMatchObject({
      args: { world: "env.yaml", host: "0.0.0.0", imdsPortBase: 18000 },
    });
    expect(parseSimArgs(["--world", "flag.yaml"], env)).toMatchObject({ args: { world: "flag.yaml" } });
  });

  it("answers help", () => {
    expect(parseSimArgs(["--help"], {})).toEqual({ kind: "help" });
  });

  it.each<[string[], string]>([
    [
      [],
      "--world is missing; pass the world file (YAML or JSON), e.g. --world examples/world-demo.yaml, or set IPMGR_SIM_WORLD.",
    ],
    [
      ["--world", "w.yaml", "--ec2-port", "http"],
      '--ec2-port "http" is not a port number; pass an integer from 0 to 65535 (0 picks a free port).',
    ],
    [
      ["--world", "w.yaml", "--control-port=70000"],
      '--control-port "70000" is not a port number; pass an integer from 0 to 65535 (0 picks a free port).',
    ],
    [["--world"], "--world needs a value, e.g. --world=world.yaml."],
    [
      ["--world", "w.yaml", "--host", "not-an-ip"],
      '--host "not-an-ip" is not an IP address; pass the address to listen on, e.g. 127.0.0.1 (the default), 0.0.0.0 or ::1.',
    ],
    [
      ["--wrold", "w.yaml"],
      'unknown flag "--wrold"; did you mean --world? the flags are --world, --host, --ec2-port, --control-port, --imds-port-base, --kube-port, --kubeconfig, --verbose, --help.',
    ],
  ])("refuses %j with one sentence naming the flag, the value and the fix", (argv, message) => {
    expect(() => parseSimArgs(argv, {})).toThrow(message);
  });

  it("names a misspelt IPMGR_SIM_WORLD when --world is missing, as the commands do for a required variable", () => {
    for (const misspelt of ["IPMGR_SIM_WROLD", "IPMGR_WORLD_SIM"]) {
      expect(() => parseSimArgs([], { [misspelt]: "examples/world-demo.yaml" })).toThrow(
        "--world is missing; pass the world file (YAML or JSON), e.g. --world examples/world-demo.yaml, or set " +
          `IPMGR_SIM_WORLD (${misspelt} is set: did you mean IPMGR_SIM_WORLD?).`,
      );
    }
  });

  it("main returns 2 on a bad flag and on a bad world file, without listening, with one sentence on stderr", async () => {
    const badFlag = captureOutput();
    expect(await main(["--ec2-port", "nope", "--world", "examples/world-demo.yaml"], badFlag)).toBe(2);
    expect(badFlag.err).toEqual([
      'multus-ipmgr sim: --ec2-port "nope" is not a port number; pass an integer from 0 to 65535 (0 picks a free port).\n',
    ]);
    const badWorld = captureOutput();
    expect(await main(["--world", "examples/no-such-world.yaml"], badWorld)).toBe(2);
    expect(badWorld.err).toEqual([
      "multus-ipmgr sim: world file examples/no-such-world.yaml is invalid: cannot be read (no such file); pass an existing file with --world\n",
    ]);
    expect([...badFlag.out, ...badWorld.out]).toEqual([]);
  });

  it("main returns 2 when the IMDS ports of the world's instances would run past 65535", async () => {
    const output = captureOutput();
    const argv = ["--world", "examples/world-two-nodes.yaml", "--imds-port-base", "65535"];
    expect(await main(argv, output)).toBe(2);
    expect(output.err).toEqual([
      "multus-ipmgr sim: --imds-port-base 65535 gives the world's 2 instances the ports 65535 to 65536, past 65535; pass at most 65534, or 0 for free ports.\n",
    ]);
  });

  it("main returns 2 with one sentence when a port is taken", async () => {
    const taken = await startSimulator(await loadWorldFile("examples/world-demo.yaml"));
    try {
      const port = new URL(taken.ec2Endpoint).port;
      const output = captureOutput();
      expect(await main(["--world", "examples/world-demo.yaml", "--ec2-port", port], output)).toBe(2);
      expect(output.err).toEqual([
        `multus-ipmgr sim: cannot listen (listen EADDRINUSE: address already in use 127.0.0.1:${port}); pick other ports (--ec2-port, --control-port, --imds-port-base, --kube-port; 0 picks free ones).\n`,
      ]);
      expect(output.out).toEqual([]);
    } finally {
      await taken.close();
    }
  });
});

describe("ready line", () => {
  it("is one JSON line with the EC2, control and per-instance IMDS endpoints", async () => {
    const sim = await startSimulator(await loadWorldFile("examples/world-two-nodes.yaml"));
    try {
      const line = readyLine(sim);
      expect(line).not.toContain("\n");
      const ready = JSON.parse(line);
      expect(Object.keys(ready)).toEqual(["ready", "ec2", "control", "imds"]);
      expect(ready.ready).toBe(true);
      expect(ready.ec2).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(Object.keys(ready.imds)).toEqual(["i-0node1", "i-0node2"]);
      expect(ready.imds["i-0node1"]).not.toBe(ready.imds["i-0node2"]);
      expect((await fetch(`${ready.control}/healthz`)).status).toBe(200);
    } finally {
      await sim.close();
    }
  });
});

describe("the simulator's own errors", () => {
  /** A clock whose sleeps fail: with injected latency, every request then hits an error of the simulator. */
  const brokenClock: Clock = {
    now: () => Date.now(),
    sleep: async () => {
      throw new Error("clock broke");
    },
  };

  it("go to the error sink given, not to the terminal, and the request still gets an answer", async () => {
    const errors: string[] = [];
    const sim = await startSimulator(await loadWorldFile("examples/world-demo.yaml"), {
      clock: brokenClock,
      errorLog: (line) => errors.push(line),
    });
    try {
      sim.setFaults({ ec2LatencyMs: 5, imdsLatencyMs: 5 });
      const ec2 = await fetch(`${sim.ec2Endpoint}/?Action=DescribeSubnets`);
      expect(ec2.status).toBe(500);
      expect(await ec2.text()).toContain("<Code>InternalError</Code>");
      await expect(fetch(`${imdsEndpointOf(sim, "i-0demo1")}/latest/meta-data/`)).rejects.toThrow();
      expect(errors).toHaveLength(2);
      expect(errors[0]).toMatch(/^internal error: Error: clock broke\n {4}at /);
      expect(errors[1]).toBe("imds: Error: clock broke");
    } finally {
      await sim.close();
    }
  });
});
