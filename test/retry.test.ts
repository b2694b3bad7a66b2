import { describe, expect, it } from "vitest";
import { backoffDelayMs, isRetryableEc2Failure, withRetry } from "../src/eni/retry.js";
import { FakeClock } from "./helpers/fake-clock.js";

/** An error shaped like an SDK service exception. */
function serviceError(
  code: string,
  status: number,
  fault: "client" | "server" = status >= 500 ? "server" : "client",
) {
  return Object.assign(new Error(`${code} happened`), {
    name: code,
    $fault: fault,
    $metadata: { httpStatusCode: status, requestId: "req-1" },
  });
}

/** An error shaped like a Node socket failure (no response). */
function networkError(code: string, message = `connect ${code} 127.0.0.1:1`) {
  return Object.assign(new Error(message), { code, $metadata: {} });
}

describe("isRetryableEc2Failure", () => {
  it.each([
    ["RequestLimitExceeded with 503", serviceError("RequestLimitExceeded", 503), true],
    ["RequestLimitExceeded with 400", serviceError("RequestLimitExceeded", 400), true],
    ["Throttling", serviceError("Throttling", 400), true],
    ["ThrottlingException", serviceError("ThrottlingException", 400), true],
    ["InternalError 500", serviceError("InternalError", 500), true],
    ["Unavailable 503", serviceError("Unavailable", 503), true],
    ["any 502", serviceError("BadGateway", 502), true],
    ["ECONNREFUSED", networkError("ECONNREFUSED"), true],
    ["ECONNRESET", networkError("ECONNRESET"), true],
    ["ETIMEDOUT", networkError("ETIMEDOUT"), true],
    ["socket hang up", Object.assign(new Error("socket hang up"), { $metadata: {} }), true],
    ["SDK TimeoutError", Object.assign(new Error("timed out"), { name: "TimeoutError" }), true],
    ["UnauthorizedOperation", serviceError("UnauthorizedOperation", 403), false],
    ["AuthFailure", serviceError("AuthFailure", 401), false],
    ["InvalidParameterValue", serviceError("InvalidParameterValue", 400), false],
    ["PrivateIpAddressLimitExceeded", serviceError("PrivateIpAddressLimitExceeded", 400), false],
    [
      "InvalidNetworkInterfaceID.NotFound on a write",
      serviceError("InvalidNetworkInterfaceID.NotFound", 400),
      false,
    ],
    ["a plain bug", new TypeError("x is not a function"), false],
  ])("%s -> %s", (_name, err, expected) => {
    expect(isRetryableEc2Failure(err)).toBe(expected);
  });

  it("retries InvalidNetworkInterfaceID.NotFound on reads only (eventual consistency)", () => {
    const err = serviceError("InvalidNetworkInterfaceID.NotFound", 400);
    expect(isRetryableEc2Failure(err, "read")).toBe(true);
    expect(isRetryableEc2Failure(err, "write")).toBe(false);
  });

  it("does not retry a missing subnet even on reads", () => {
    expect(isRetryableEc2Failure(serviceError("InvalidSubnetID.NotFound", 400), "read")).toBe(false);
  });
});

describe("backoffDelayMs", () => {
  it("draws from [0, base * 2^(retry-1)) with full jitter", () => {
    const options = { baseDelayMs: 100, maxDelayMs: 10_000 };
    expect(backoffDelayMs(1, options, () => 0)).toBe(0);
    expect(backoffDelayMs(1, options, () => 0.999)).toBe(99);
    expect(backoffDelayMs(3, options, () => 0.5)).toBe(200);
  });

  it("caps the ceiling at maxDelayMs", () => {
    expect(backoffDelayMs(30, { baseDelayMs: 200, maxDelayMs: 5000 }, () => 0.999)).toBe(4995);
  });

  it("defaults to 200 ms base and 5000 ms cap", () => {
    expect(backoffDelayMs(1, {}, () => 0.5)).toBe(100);
    expect(backoffDelayMs(20, {}, () => 0.5)).toBe(2500);
  });
});

describe("withRetry", () => {
  const retryable = (err: unknown) => isRetryableEc2Failure(err);

  it("retries retryable failures and sleeps through the injected clock", async () => {
    const clock = new FakeClock();
    let calls = 0;
    const result = await withRetry(
      async (attempt) => {
        calls += 1;
        if (attempt < 3) throw serviceError("RequestLimitExceeded", 503);
        return "done";
      },
      { isRetryable: retryable, clock, baseDelayMs: 100, maxDelayMs: 1000 },
    );
    expect(result).toBe("done");
    expect(calls).toBe(3);
    expect(clock.sleeps).toHaveLength(2);
    expect(clock.sleeps[0]).toBeLessThan(100);
    expect(clock.sleeps[1]).toBeLessThan(200);
  });

  it("fails at once on a permission error, with the original error", async () => {
    const clock = new FakeClock();
    const denied = serviceError("UnauthorizedOperation", 403);
    let calls = 0;
    await expect(
      withRetry(
        async () => {
          calls += 1;
          throw denied;
        },
        { isRetryable: retryable, clock },
      ),
    ).rejects.toBe(denied);
    expect(calls).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("stops after maxAttempts (default 8) and rejects with the last error", async () => {
    const clock = new FakeClock();
    let calls = 0;
    await expect(
      withRetry(
        async () => {
          calls += 1;
          throw serviceError("InternalError", 500);
        },
        { isRetryable: retryable, clock },
      ),
    ).rejects.toMatchObject({ name: "InternalError" });
    expect(calls).toBe(8);
    expect(clock.sleeps).toHaveLength(7);
  });

  it("reports each retry to onRetry before waiting", async () => {
    const seen: Array<[number, number]> = [];
    await withRetry(
      async (attempt) => {
        if (attempt === 1) throw networkError("ECONNRESET");
        return 1;
      },
      {
        isRetryable: retryable,
        clock: new FakeClock(),
        onRetry: (_err, failedAttempt, delayMs) => seen.push([failedAttempt, delayMs]),
      },
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]?.[0]).toBe(1);
  });

  it("is cancelled by the abort signal during a backoff wait", async () => {
    const controller = new AbortController();
    const reason = new Error("shutting down");
    const clock = new FakeClock();
    let calls = 0;
    const run = withRetry(
      async () => {
        calls += 1;
        controller.abort(reason);
        throw serviceError("RequestLimitExceeded", 503);
      },
      { isRetryable: retryable, clock, signal: controller.signal },
    );
    await expect(run).rejects.toBe(reason);
    expect(calls).toBe(1);
  });
});
