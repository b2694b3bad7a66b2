/** Time, injected so that tests and the simulator run at full speed without patching timers. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms` milliseconds; rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

/**
 * Resolves with the promise's value, or false when the clock passes `deadline` (ms since the epoch) first;
 * rejects when the promise does. Shutdown graces use it: what must finish in time, on the injected clock.
 */
export async function withinDeadline(
  promise: Promise<boolean>,
  deadline: number,
  clock: Clock,
): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      promise,
      clock.sleep(Math.max(0, deadline - clock.now()), timer.signal).then(
        () => false,
        () => false,
      ),
    ]);
  } finally {
    timer.abort();
  }
}
