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
 *   list that takes longer than `listTimeoutMs`: a connection that died without a word is noticed;
 * - after a failure, a watch request the server has not answered within the backoff's cap is abandoned and
 *   sent again on a new connection at once (the wait was its backoff): an API back after a freeze that left
 *   the old connections dead (no answer, no reset) is watched again within the cap, not the silence bound.
 *   The backoff spaces the starts of attempts, so an attempt that hung is followed at once.
 * The HTTP side is behind `ReflectorSource`, so this is tested on any transport.
 */
import { backoffDelay } from "../../eni/backoff.js";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { WatchedCollection, WatchListener } from "./kube-api.js";
import { foldedWords, StateChangeLog } from "./state-change-log.js";
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
  /**
   * The silence bound is below the API server's bookmark interval (warned once at start): a quiet watch goes
   * silent at every bound, so a silence alone is logged at debug, not warned each time. Default false.
   */
  readonly silenceBelowBookmarks?: boolean;
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

/** After a failure, the server did not answer a watch request (no status line) within the bound. */
export class WatchUnansweredError extends Error {
  override readonly name = "WatchUnansweredError";
  constructor(
    readonly resource: string,
    readonly waitedMs: number,
  ) {
    super(`the ${resource} watch request was not answered within ${(waitedMs / 1000).toFixed(1)} s`);
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

/** Within this window a watch that works again and fails again is counted, not logged again, ms. */
const FAULT_LOG_WINDOW_MS = 60_000;

export class Reflector<U> implements WatchedCollection<U> {
  #cache = new Map<string, U>();
  #resourceVersion = "";
  #synced = false;
  #phase: WatchPhase = "listing";
  #lastHeardAt: number | undefined;
  #fault: WatchFault | undefined;
  #failures = 0;
  /** The fault is a silence (a request unanswered since included). */
  #silent = false;
  readonly #faultLog = new StateChangeLog(FAULT_LOG_WINDOW_MS);
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
      const startedAt = this.options.clock.now();
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
        await this.#failed(error, startedAt);
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
      const startedAt = this.options.clock.now();
      try {
        await this.#watchOnce();
      } catch (error) {
        if (signal.aborted) throw STOPPED;
        if (error instanceof GoneError) return;
        await this.#failed(error, startedAt);
      }
    }
  }

  async #watchOnce(): Promise<void> {
    const { clock, silenceMs, resource } = this.options;
    const attempt = new AbortController();
    const onStop = (): void => attempt.abort(STOPPED);
    this.#stop.signal.addEventListener("abort", onStop, { once: true });
    const startedAt = clock.now();
    // After a failure the API may be back while this request sits on a connection that died meanwhile.
    const answerBy = this.#fault === undefined ? Infinity : startedAt + this.options.restartMaxMs;
    let answered = false;
    const watchdog = (async () => {
      while (!attempt.signal.aborted) {
        const now = clock.now();
        const since = Math.max(this.#lastHeardAt ?? startedAt, startedAt);
        if (now >= since + silenceMs) {
          attempt.abort(new WatchSilentError(resource, now - since));
          return;
        }
        if (!answered && now >= answerBy) {
          attempt.abort(new WatchUnansweredError(resource, now - startedAt));
          return;
        }
        const next = Math.min(since + silenceMs, answered ? Infinity : answerBy);
        await clock.sleep(next - now, attempt.signal).catch(() => undefined);
      }
    })();
    try {
      await this.source.watch(
        this.#resourceVersion,
        attempt.signal,
        () => {
          answered = true;
          this.#heard();
          this.#recovered();
          this.#setPhase("watching");
        },
        (event) => this.#onEvent(event),
      );
    } catch (error) {
      const reason: unknown = attempt.signal.reason;
      if (reason instanceof WatchSilentError || reason instanceof WatchUnansweredError) throw reason;
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
    const { logger, resource, clock } = this.options;
    const told = this.#faultLog.note(false, clock.now());
    if (told?.kind === "good") {
      logger.info({ resource, failures: this.#failures, downMs: told.badMs }, "the watch works again");
    } else if (told?.kind === "folded") {
      logger.warn(
        { resource, failedTimes: told.folded.times, downMs: told.folded.badMs, overMs: told.folded.overMs },
        `the watch flapped: ${foldedWords(told.folded, "it failed")}; it works now`,
      );
    }
    this.#failures = 0;
    this.#silent = false;
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

  /** A failed attempt begun at `startedAt`: the fault recorded, the next attempt after the backoff from its start. */
  async #failed(error: unknown, startedAt: number): Promise<void> {
    const { logger, resource, restartBaseMs, restartMaxMs, clock } = this.options;
    this.#failures += 1;
    // A request left unanswered after the watch went silent is the same silence: its sentence stays.
    const kept = error instanceof WatchUnansweredError && this.#silent ? this.#fault : undefined;
    const fault = kept ?? this.options.describe(error);
    this.#fault = fault;
    this.#silent =
      error instanceof WatchSilentError || (error instanceof WatchUnansweredError && this.#silent);
    this.#phase = "retrying";
    this.listener.healthChanged?.();
    const backoff = backoffDelay({ baseMs: restartBaseMs, maxMs: restartMaxMs }, this.#failures);
    const delay = Math.max(0, startedAt + backoff - clock.now());
    const fields = {
      resource,
      status: fault.status,
      failures: this.#failures,
      retryInMs: delay,
      reason: fault.detail,
    };
    if (error instanceof WatchSilentError && this.options.silenceBelowBookmarks === true) {
      logger.debug(
        fields,
        "a watch was silent for the bound, which is below the API server's bookmark interval; restarting it",
      );
    } else {
      this.#logFailure(fields);
    }
    this.listener.failed?.(resource, error, backoff);
    await clock.sleep(delay, this.#stop.signal).catch(() => undefined);
    if (this.#stop.signal.aborted) throw STOPPED;
  }

  /**
   * Each change of state once (a flapping API folded into a line a minute), and a long outage at the 10th,
   * 100th, 1,000th failure: visible in the log without flooding it.
   */
  #logFailure(fields: { readonly failures: number } & Record<string, unknown>): void {
    const told = this.#faultLog.note(true, this.options.clock.now());
    const { logger } = this.options;
    if (told?.kind === "bad") {
      const folded = told.folded;
      logger.warn(
        folded === undefined
          ? fields
          : { ...fields, failedTimes: folded.times, downMs: folded.badMs, overMs: folded.overMs },
        folded === undefined
          ? "a list or watch failed; restarting it"
          : `a list or watch failed; restarting it (before: ${foldedWords(folded, "it failed")})`,
      );
    } else if (/^10+$/.test(String(fields.failures))) {
      logger.warn(fields, `a list or watch still fails after ${fields.failures} attempts; restarting it`);
    }
  }
}
