/**
 * The training run behind the CLI's code cache (scripts/code-cache/code-cache-training.ts): `init` from
 * start.ts `train`, a fresh pod start against the simulator over HTTP on 127.0.0.1, and the checks that keep
 * the build from writing a cache after a run that did not go as a pod start goes. The run of the built bundle itself
 * happens in every build (scripts/build.mjs, the Dockerfile), which fails when it throws.
 */
import { describe, expect, it } from "vitest";
import {
  CodeCacheTrainingError,
  TRAINING_CALLS,
  TRAINING_POD,
  type TrainableBundle,
  trainInit,
  trainingCallsMismatch,
} from "../scripts/code-cache/code-cache-training.js";
import { train } from "../src/cli/start.js";
import * as simulator from "../src/sim/index.js";

describe("the training calls", () => {
  const ok = (action: string) => ({ action, outcome: "ok" });

  it.each<[string, { action: string; outcome: string }[], string | undefined]>([
    ["those of a fresh start, in any order", [...TRAINING_CALLS].reverse().map(ok), undefined],
    [
      "none (the addresses were already held)",
      [],
      "expected one accepted call of each of AssignIpv6Addresses, AssignPrivateIpAddresses, DescribeNetworkInterfaces; saw none",
    ],
    [
      "a refused one",
      [
        ok("DescribeNetworkInterfaces"),
        ok("AssignIpv6Addresses"),
        { action: "AssignPrivateIpAddresses", outcome: "InvalidParameterValue" },
      ],
      "expected one accepted call of each of AssignIpv6Addresses, AssignPrivateIpAddresses, DescribeNetworkInterfaces; saw AssignIpv6Addresses ok, AssignPrivateIpAddresses InvalidParameterValue, DescribeNetworkInterfaces ok",
    ],
    [
      "one more",
      [...TRAINING_CALLS.map(ok), ok("AssignPrivateIpAddresses")],
      "expected one accepted call of each of AssignIpv6Addresses, AssignPrivateIpAddresses, DescribeNetworkInterfaces; saw AssignIpv6Addresses ok, AssignPrivateIpAddresses ok, AssignPrivateIpAddresses ok, DescribeNetworkInterfaces ok",
    ],
  ])("%s", (_name, calls, expected) => {
    expect(trainingCallsMismatch(calls)).toBe(expected);
  });
});

describe("trainInit", () => {
  it("runs init once, a fresh pod start of both families, and leaves the environment as it was", async () => {
    const before = { ...process.env };
    let seenKey: string | undefined;
    const bundle: TrainableBundle = {
      train: (argv, pod) => {
        seenKey = process.env.AWS_ACCESS_KEY_ID;
        expect(pod).toEqual(TRAINING_POD);
        return train(argv, pod);
      },
    };
    await expect(trainInit(bundle, simulator, "silent")).resolves.toBe(
      "a fresh start of init (AssignIpv6Addresses, AssignPrivateIpAddresses, DescribeNetworkInterfaces)",
    );
    expect(seenKey).toBe("AKIDCODECACHE");
    expect(process.env).toEqual(before);
  });

  it("throws when init exits non-zero, and says so", async () => {
    const bundle: TrainableBundle = { train: async () => 5 };
    await expect(trainInit(bundle, simulator, "silent")).rejects.toThrow(
      new CodeCacheTrainingError("init exited 5 (its log is above); the cache was not written"),
    );
  });

  it("throws when init exits 0 without the calls of a fresh start", async () => {
    const bundle: TrainableBundle = { train: async () => 0 };
    await expect(trainInit(bundle, simulator, "silent")).rejects.toThrow(
      /^expected one accepted call of each of .*; saw none; the cache was not written$/,
    );
  });
});
