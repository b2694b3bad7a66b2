/** /healthz of the sidecar's reconcile loop (src/sidecar/loop-health.ts): pure, from what the loop saw. */
import { describe, expect, it } from "vitest";
import { type LoopHealthInput, loopHealth } from "../src/sidecar/loop-health.js";

const NOW = 1_700_000_000_000;
const HEALTHY: LoopHealthInput = {
  now: NOW,
  lastPollAt: NOW - 100,
  pollIntervalMs: 200,
  started: true,
  stepStartedAt: undefined,
  maxStepMs: 130_000,
  lastTickAt: NOW - 1_000,
  driftCheckIntervalMs: 10_000,
  failures: 0,
  failure: undefined,
};

describe("loopHealth", () => {
  it.each<{ case: string; input: Partial<LoopHealthInput>; ok: boolean; lines: string[] }>([
    { case: "a loop that turns and reads", input: {}, ok: true, lines: [] },
    {
      case: "interfaces never read",
      input: { lastPollAt: undefined },
      ok: false,
      lines: ["the interfaces were not read in the last 1000 ms"],
    },
    {
      case: "interfaces not read for three poll periods (1 s at least)",
      input: { pollIntervalMs: 500, lastPollAt: NOW - 1_501 },
      ok: false,
      lines: ["the interfaces were not read in the last 1500 ms"],
    },
    {
      case: "a step running past its limit",
      input: { stepStartedAt: NOW - 130_001 },
      ok: false,
      lines: ["a reconcile step has been running for 130001 ms"],
    },
    {
      case: "a long step within its limit, the loop's last turn long ago (the step is what counts)",
      input: { stepStartedAt: NOW - 60_000, lastTickAt: NOW - 60_000 },
      ok: true,
      lines: [],
    },
    {
      case: "a loop that has not turned for three drift check periods",
      input: { lastTickAt: NOW - 30_001 },
      ok: false,
      lines: ["the reconcile loop has not run in the last 30000 ms"],
    },
    {
      case: "a loop not started yet (startup): only the reads count",
      input: { started: false, lastTickAt: undefined },
      ok: true,
      lines: [],
    },
    {
      case: "failed reconciles: still healthy (a restart would not fix EC2), and listed",
      input: { failures: 3, failure: "Ec2Error: denied" },
      ok: true,
      lines: ["3 failed reconcile(s) in a row: Ec2Error: denied"],
    },
  ])("$case", ({ input, ok, lines }) => {
    expect(loopHealth({ ...HEALTHY, ...input })).toEqual({ ok, lines });
  });
});
