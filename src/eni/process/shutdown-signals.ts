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
