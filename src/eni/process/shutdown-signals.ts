/** Exit codes of a second signal, which ends the process at once: 128 + the signal number, as shells report. */
export const IMMEDIATE_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;

export type ShutdownSignal = keyof typeof IMMEDIATE_EXIT_CODES;

/** Something that emits process signals (the process itself; a fake in tests). */
export interface SignalSource {
  on(event: ShutdownSignal, listener: (signal: NodeJS.Signals) => void): unknown;
  off(event: ShutdownSignal, listener: (signal: NodeJS.Signals) => void): unknown;
}

export interface ShutdownSignals {
  /** Resolves with the first SIGTERM or SIGINT. */
  readonly first: Promise<ShutdownSignal>;
  /** Removes the handlers. */
  dispose(): void;
}

/**
 * The first SIGTERM or SIGINT resolves `first` (a graceful shutdown begins); a second one of either calls
 * `onSecond` with the immediate exit code (143 for SIGTERM, 130 for SIGINT): the user insists.
 */
export function shutdownSignals(
  onSecond: (signal: ShutdownSignal, exitCode: number) => void,
  source: SignalSource = process,
): ShutdownSignals {
  let received = false;
  let resolveFirst: (signal: ShutdownSignal) => void = () => undefined;
  const first = new Promise<ShutdownSignal>((resolve) => {
    resolveFirst = resolve;
  });
  const listener = (raw: NodeJS.Signals): void => {
    const signal: ShutdownSignal = raw === "SIGINT" ? "SIGINT" : "SIGTERM";
    if (received) {
      onSecond(signal, IMMEDIATE_EXIT_CODES[signal]);
      return;
    }
    received = true;
    resolveFirst(signal);
  };
  source.on("SIGTERM", listener);
  source.on("SIGINT", listener);
  return {
    first,
    dispose: () => {
      source.off("SIGTERM", listener);
      source.off("SIGINT", listener);
    },
  };
}

/**
 * The long-running commands' wait (sidecar, bridge): for their main loop or the first shutdown signal,
 * whichever comes first. The loop ends only by failing, so its failure is thrown; a loop that returns
 * before any signal is a bug, thrown as an error that names `loop`. Returns the signal.
 */
export async function untilFirstSignal(
  running: Promise<void>,
  signals: Pick<ShutdownSignals, "first">,
  loop: string,
): Promise<ShutdownSignal> {
  const ended = await Promise.race([
    running.then(
      () => ({ kind: "stopped" as const }),
      (error: unknown) => ({ kind: "failed" as const, error }),
    ),
    signals.first.then((signal) => ({ kind: "signal" as const, signal })),
  ]);
  if (ended.kind === "failed") throw ended.error;
  if (ended.kind === "stopped") throw new Error(`${loop} stopped without a signal`);
  return ended.signal;
}
