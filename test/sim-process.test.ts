import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { DescribeNetworkInterfacesCommand, EC2Client } from "@aws-sdk/client-ec2";
import { describe, expect, it } from "vitest";

const BINARY = resolve("dist/multus-ipmgr.mjs");
const unbuilt = !existsSync(BINARY) && process.env.IPMGR_TEST_SKIP_BUILD === "1";

interface Ready {
  ready: true;
  ec2: string;
  control: string;
  imds: Record<string, string>;
}

/** docs/sim.md's "In your own tests" example, as another project would run it. */
describe.skipIf(unbuilt)("the simulator as a process, as docs/sim.md shows", () => {
  it("prints the ready line, answers any SDK on it, and exits 0 on SIGTERM", async () => {
    const sim = spawn(process.execPath, [BINARY, "sim", "--world", "examples/world-two-nodes.yaml"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    sim.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number | null>((done) => sim.once("exit", (code) => done(code)));
    try {
      const ready = await new Promise<Ready>((resolve, reject) => {
        createInterface({ input: sim.stdout }).once("line", (line) => resolve(JSON.parse(line) as Ready));
        sim.once("exit", (code) => reject(new Error(`multus-ipmgr sim exited with ${code}`)));
      });
      const ec2 = new EC2Client({
        endpoint: ready.ec2,
        region: "us-east-1",
        credentials: { accessKeyId: "sim", secretAccessKey: "sim" },
      });
      try {
        const out = await ec2.send(
          new DescribeNetworkInterfacesCommand({
            Filters: [{ Name: "tag:node.k8s.amazonaws.com/no_manage", Values: ["true"] }],
          }),
        );
        expect(out.NetworkInterfaces?.map((n) => n.NetworkInterfaceId)).toEqual([
          "eni-0n1multus",
          "eni-0n2multus",
        ]);
      } finally {
        ec2.destroy();
      }
      expect(Object.keys(ready.imds)).toEqual(["i-0node1", "i-0node2"]);
      expect((await fetch(`${ready.control}/healthz`)).status).toBe(200);
    } finally {
      sim.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    // Its own words on stderr (captured, not left on the test run's terminal).
    expect(stderr).toBe("multus-ipmgr sim: SIGTERM, closing\n");
  });
});
