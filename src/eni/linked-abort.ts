/**
 * An AbortController that also aborts, with the same reason, when `parent` does; dispose() unlinks it.
 * Not AbortSignal.any(): combined with a long-lived signal (the watcher's, aborted only at shutdown) it
 * keeps every combined signal alive, and the watcher makes one per poll (nodejs/node#55351).
 */
export function linkedAbort(parent: AbortSignal): {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
  dispose(): void;
} {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(parent.reason);
  if (parent.aborted) onAbort();
  else parent.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    dispose: () => parent.removeEventListener("abort", onAbort),
  };
}
