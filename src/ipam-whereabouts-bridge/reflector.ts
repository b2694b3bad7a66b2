/**
 * A list-and-watch cache of one resource, as client-go's reflector keeps one, with the health the bridge
 * needs to know whether it may act on the cache (view-trust.ts):
 * - it lists, then watches from the list's resourceVersion with bookmarks; a watch the server ends is
 *   resumed from the last resourceVersion seen (event or bookmark) at once; 410 Gone (answered, or as an
 *   ERROR event) relists;
 * - any other failure (refused, reset, 5xx, 403, 404) is retried with capped exponential backoff, reset as
 *   soon as a list or a watch is answered again, so that an API back after a blip is watched again within
 *   the first delay;
 * - a watch that stays silent (no event, no bookmark) for `silenceMs` is aborted and counted a fault, as is a
 *   list that takes longer than `listTimeoutMs`: a connection that died without a word is noticed.
 * The HTTP side is behind `ReflectorSource`, so this is tested on any transport.
 */
import { backoffDelay } from "../eni/backoff.js";
import type { Clock } from "../eni/process/clock.js";
import type { Logger } from "../eni/process/logger.js";
import type { WatchedCollection, WatchListener } from "./kube-api.js";
import type { WatchFault, WatchHealth, WatchPhase } from "./view-trust.js";

/** One object of a list or an event: its `namespace/name` key and the bridge's view of it. */
export interface Keyed<U> {
  readonly key: string;
  readonly view: U;
}

export interface ListAnswer<U> {
  readonly resourceVersion: string;
  readonly items: readonly Keyed<U>[];
}

export type WatchEvent<U> =
  | {
      readonly type: "ADDED" | "MODIFIED" | "DELETED";
      readonly object: Keyed<U>;
      readonly resourceVersion: string;
    }
  | { readonly type: "BOOKMARK"; readonly resourceVersion: string }
  | { readonly type: "ERROR"; readonly status: number | undefined; readonly message: string };

export interface ReflectorSource<U> {
  /** One consistent list of every object. Rejects with the server's status when it answers an error. */
  list(signal: AbortSignal): Promise<ListAnswer<U>>;
  /**
   * Watches from `resourceVersion`: calls `opened` once the server answered 200, then `event` for each
   * event; resolves when the server ends the stream, rejects on an error answer or a broken connection. An
   * exception thrown by `event` ends the watch with that exception.
   */
  watch(
    resourceVersion: string,
    signal: AbortSignal,
    opened: () => void,
    event: (event: WatchEvent<U>) => void,
  ): Promise<void>;
}

export interface ReflectorOptions {
  /** The resource's plural, e.g. `pods`, for logs and health. */
  readonly resource: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Backoff of a failed list or watch: first delay and cap, ms. */
  readonly restartBaseMs: number;
  readonly restartMaxMs: number;
  /** A watch silent this long (no event, no bookmark) is aborted and counted a fault, ms. */
  readonly silenceMs: number;
  /** A list unanswered this long is aborted and counted a fault, ms. */
  readonly listTimeoutMs: number;
  /** The sentence for a failure: names the resource, what happened and the fix. */
  readonly describe: (error: unknown) => WatchFault;
}

/** The watch was silent for longer than the bound: its connection is taken as dead. */
export class WatchSilentError extends Error {
  override readonly name = "WatchSilentError";
  constructor(
    readonly resource: string,
    readonly silentMs: number,
  ) {
    super(`the ${resource} watch was silent for ${Math.round(silentMs / 1000)} s (no event, no bookmark)`);
  }
}

/** A list took longer than the bound. */
export class ListTimeoutError extends Error {
  override readonly name = "ListTimeoutError";
  constructor(
    readonly resource: string,
    readonly timeoutMs: number,
  ) {
    super(`the ${resource} list was not answered within ${Math.round(timeoutMs / 1000)} s`);
  }
}

/** 410 Gone: the resourceVersion is too old to resume from; a relist follows. */
class GoneError extends Error {
  override readonly name = "GoneError";
}

const STOPPED = Symbol("stopped");

export class Reflector<U> implements WatchedCollection<U> {
  #cache = new Map<string, U>();
  #resourceVersion = "";
  #synced = false;
  #phase: WatchPhase = "listing";
  #lastHeardAt: number | undefined;
  #fault: WatchFault | undefined;
  #failures = 0;
  readonly #stop = new AbortController();
  #running: Promise<void> | undefined;

  constructor(
    private readonly source: ReflectorSource<U>,
    private readonly listener: WatchListener,
    private readonly options: ReflectorOptions,
  ) {}

  get synced(): boolean {
    return this.#synced;
  }

  list(): readonly U[] {
    return [...this.#cache.values()];
  }

  health(): WatchHealth {
    return {
      resource: this.options.resource,
      phase: this.#phase,
      synced: this.#synced,
      lastHeardAt: this.#lastHeardAt,
      fault: this.#fault,
    };
  }

  /** A fresh, consistent list from the API server (the cache is left to the watch), in `timeoutMs` at most. */
  async fetchNow(timeoutMs = this.options.listTimeoutMs): Promise<readonly U[]> {
    const answer = await this.#listWithTimeout(timeoutMs);
    return answer.items.map((item) => item.view);
  }

  /** Starts the loop; resolves after the first list attempt, whether it succeeded or not. */
  start(): Promise<void> {
    return new Promise<void>((firstListDone) => {
      this.#running = this.#run(firstListDone).catch((error: unknown) => {
        if (error !== STOPPED && !this.#stop.signal.aborted) {
          this.options.logger.error({ err: error, resource: this.options.resource }, "a watch loop ended");
        }
        firstListDone();
      });
    });
  }

  async stop(): Promise<void> {
    this.#stop.abort(STOPPED);
    await this.#running;
  }

  async #run(firstListDone: () => void): Promise<void> {
    const signal = this.#stop.signal;
    for (;;) {
      this.#setPhase("listing");
      try {
        const answer = await this.#listWithTimeout();
        this.#cache = new Map(answer.items.map((item) => [item.key, item.view]));
        this.#resourceVersion = answer.resourceVersion;
        this.#synced = true;
        this.#heard();
        this.#recovered();
        this.listener.changed();
      } catch (error) {
        firstListDone();
        if (signal.aborted) throw STOPPED;
        await this.#failed(error);
        continue;
      }
      firstListDone();
      await this.#watchUntilGone();
    }
  }

  /** Watches (resuming after every end or failure) until 410 asks for a relist. */
  async #watchUntilGone(): Promise<void> {
    const signal = this.#stop.signal;
    for (;;) {
      if (signal.aborted) throw STOPPED;
      try {
        await this.#watchOnce();
      } catch (error) {
        if (signal.aborted) throw STOPPED;
        if (error instanceof GoneError) return;
        await this.#failed(error);
      }
    }
  }

  async #watchOnce(): Promise<void> {
    const { clock, silenceMs, resource } = this.options;
    const attempt = new AbortController();
    const onStop = (): void => attempt.abort(STOPPED);
    this.#stop.signal.addEventListener("abort", onStop, { once: true });
    const startedAt = clock.now();
    const watchdog = (async () => {
      while (!attempt.signal.aborted) {
        const since = Math.max(this.#lastHeardAt ?? startedAt, startedAt);
        const left = since + silenceMs - clock.now();
        if (left <= 0) {
          attempt.abort(new WatchSilentError(resource, clock.now() - since));
          return;
        }
        await clock.sleep(left, attempt.signal).catch(() => undefined);
      }
    })();
    try {
      await this.source.watch(
        this.#resourceVersion,
        attempt.signal,
        () => {
          this.#heard();
          this.#recovered();
          this.#setPhase("watching");
        },
        (event) => this.#onEvent(event),
      );
    } catch (error) {
      const reason: unknown = attempt.signal.reason;
      if (reason instanceof WatchSilentError) throw reason;
      throw error;
    } finally {
      attempt.abort(STOPPED);
      this.#stop.signal.removeEventListener("abort", onStop);
      await watchdog;
    }
  }

  #onEvent(event: WatchEvent<U>): void {
    this.#heard();
    if (event.type === "ERROR") {
      if (event.status === 410) throw new GoneError(event.message);
      throw Object.assign(new Error(event.message), { statusCode: event.status });
    }
    this.#resourceVersion = event.resourceVersion;
    if (event.type === "BOOKMARK") return;
    if (event.type === "DELETED") this.#cache.delete(event.object.key);
    else this.#cache.set(event.object.key, event.object.view);
    this.listener.changed();
  }

  async #listWithTimeout(listTimeoutMs = this.options.listTimeoutMs): Promise<ListAnswer<U>> {
    const { clock, resource } = this.options;
    const attempt = new AbortController();
    const onStop = (): void => attempt.abort(STOPPED);
    this.#stop.signal.addEventListener("abort", onStop, { once: true });
    const timer = clock
      .sleep(listTimeoutMs, attempt.signal)
      .then(() => attempt.abort(new ListTimeoutError(resource, listTimeoutMs)))
      .catch(() => undefined);
    try {
      return await this.source.list(attempt.signal);
    } catch (error) {
      const reason: unknown = attempt.signal.reason;
      if (reason instanceof ListTimeoutError) throw reason;
      if ((error as { statusCode?: unknown })?.statusCode === 410) throw new GoneError(String(error));
      throw error;
    } finally {
      attempt.abort(STOPPED);
      this.#stop.signal.removeEventListener("abort", onStop);
      await timer;
    }
  }

  #heard(): void {
    this.#lastHeardAt = this.options.clock.now();
  }

  #recovered(): void {
    if (this.#failures > 0) {
      this.options.logger.info(
        { resource: this.options.resource, failures: this.#failures },
        "the watch works again",
      );
    }
    this.#failures = 0;
    if (this.#fault !== undefined) {
      this.#fault = undefined;
      this.listener.healthChanged?.();
    }
  }

  #setPhase(phase: WatchPhase): void {
    if (this.#phase === phase) return;
    this.#phase = phase;
    this.listener.healthChanged?.();
  }

  async #failed(error: unknown): Promise<void> {
    const { logger, resource, restartBaseMs, restartMaxMs, clock } = this.options;
    this.#failures += 1;
    this.#fault = this.options.describe(error);
    this.#phase = "retrying";
    this.listener.healthChanged?.();
    const delay = backoffDelay({ baseMs: restartBaseMs, maxMs: restartMaxMs }, this.#failures);
    // The first failure of a run, then every tenth: a long outage must not flood the log.
    if (this.#failures === 1 || this.#failures % 10 === 0) {
      logger.warn(
        {
          resource,
          status: this.#fault.status,
          failures: this.#failures,
          retryInMs: delay,
          reason: this.#fault.detail,
        },
        "a list or watch failed; restarting it",
      );
    }
    this.listener.failed?.(resource, error, delay);
    await clock.sleep(delay, this.#stop.signal).catch(() => undefined);
    if (this.#stop.signal.aborted) throw STOPPED;
  }
}
