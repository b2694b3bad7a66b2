import type { ServerResponse } from "node:http";
import type { Clock } from "../../eni/process/clock.js";
import { KubeApiError } from "../errors/kube-api-error.js";
import { type KubeApi, parseResourceVersion, tooLargeResourceVersion } from "./kube-api.js";
import type { KubeObject } from "./kube-object.js";
import type { StoreEvent } from "./kube-store.js";
import { type ListQuery, matchesQuery } from "./list-query.js";
import { apiVersionOf, type ResourceDef } from "./resources.js";

export interface WatchRequest {
  readonly resource: ResourceDef;
  readonly query: ListQuery;
  /** The `resourceVersion` parameter: unset or "0" starts with the current objects as ADDED events. */
  readonly resourceVersion: string | undefined;
  readonly allowBookmarks: boolean;
  /** `sendInitialEvents=true`: the current objects first, then a bookmark annotated as their end. */
  readonly sendInitialEvents: boolean;
  /** `timeoutSeconds`, in ms; undefined for the server's default. */
  readonly timeoutMs: number | undefined;
  /** The resume is answered 410 Expired whatever the history holds (the kubeExpireWatchResume fault). */
  readonly expireResume?: boolean | undefined;
  /** How ADDED/MODIFIED/DELETED objects are written (a one-row Table for kubectl); `first` for the first. */
  readonly render?: ((object: KubeObject, first: boolean) => unknown) | undefined;
}

export interface WatchSettings {
  readonly clock: Clock;
  /** Interval of BOOKMARK events on watches that allow them, in ms. */
  readonly bookmarkIntervalMs: number;
  /** A watch without timeoutSeconds ends after this long, in ms (kube-apiserver: 30 to 60 minutes). */
  readonly defaultTimeoutMs: number;
  /** A client that lets more than this many bytes pile up unread is cut off, as kube-apiserver drops slow watchers. */
  readonly maxBufferedBytes: number;
  readonly errorLog: (line: string) => void;
}

type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

/** Sleeps on the clock; false when `signal` aborted it. */
async function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await clock.sleep(ms, signal);
    return true;
  } catch (error) {
    if (signal.aborted) return false;
    throw error;
  }
}

/**
 * One watch: a chunked response of newline-delimited WatchEvent JSON, fed from the store's changes. Writes
 * never buffer without bound (a client that stops reading is cut off), and everything it holds (store
 * subscription, bookmark and timeout timers) is released when the client goes, the watch ends, or the
 * simulator closes.
 */
export class WatchStream {
  readonly #res: ServerResponse;
  readonly #settings: WatchSettings;
  readonly #request: WatchRequest;
  readonly #api: KubeApi;
  readonly #stop = new AbortController();
  #unsubscribe: () => void = () => undefined;
  #lastResourceVersion = 0;
  #ended = false;
  /** Frozen (kubeFreeze): nothing is written, and an end waits for the thaw. */
  #frozen = false;
  #rendered = 0;
  readonly #onEnd: (stream: WatchStream) => void;

  constructor(
    api: KubeApi,
    res: ServerResponse,
    request: WatchRequest,
    settings: WatchSettings,
    onEnd: (stream: WatchStream) => void,
  ) {
    this.#api = api;
    this.#res = res;
    this.#request = request;
    this.#settings = settings;
    this.#onEnd = onEnd;
  }

  /** Sends the headers, the backlog or initial state, then follows the store until the end. */
  start(): void {
    const res = this.#res;
    res.writeHead(200, { "content-type": "application/json", "cache-control": "no-cache, private" });
    res.flushHeaders();
    res.on("close", () => this.#cleanup());
    const { resource, query } = this.#request;
    const store = this.#api.store;
    // Subscribe first: the backlog below and the live events then meet with no gap (both run in this tick).
    this.#unsubscribe = store.subscribe((event) => this.#onChange(event));
    const rv = this.#request.resourceVersion;
    try {
      if (rv === undefined || rv === "" || rv === "0" || this.#request.sendInitialEvents) {
        this.#lastResourceVersion = store.resourceVersion;
        for (const object of store.list(resource.storage)) {
          if (matchesQuery(resource, query, object)) this.#send("ADDED", this.#api.view(resource, object));
        }
        if (this.#request.sendInitialEvents && this.#request.allowBookmarks) {
          this.#bookmark({ "k8s.io/initial-events-end": "true" });
        }
      } else {
        const from = parseResourceVersion(rv);
        if (from > store.resourceVersion) throw tooLargeResourceVersion(from, store.resourceVersion);
        if (this.#request.expireResume === true) {
          throw new KubeApiError(
            410,
            "Expired",
            `too old resource version: ${from} (${store.resourceVersion})`,
          );
        }
        this.#lastResourceVersion = from;
        for (const event of store.changesSince(from)) this.#onChange(event);
      }
    } catch (error) {
      if (!(error instanceof KubeApiError)) throw error;
      this.#send("ERROR", error.toStatus());
      this.end();
      return;
    }
    this.#runTimers().catch((error: unknown) => {
      this.#settings.errorLog(`watch timers failed: ${(error as Error).stack ?? String(error)}`);
      this.end();
    });
  }

  async #runTimers(): Promise<void> {
    const { clock, bookmarkIntervalMs, defaultTimeoutMs } = this.#settings;
    const signal = this.#stop.signal;
    const deadline = clock.now() + (this.#request.timeoutMs ?? defaultTimeoutMs);
    for (;;) {
      const left = deadline - clock.now();
      if (left <= 0) break;
      const step = this.#request.allowBookmarks ? Math.min(bookmarkIntervalMs, left) : left;
      if (!(await pause(clock, step, signal))) return;
      if (this.#request.allowBookmarks) this.#bookmark();
    }
    this.end();
  }

  #onChange(event: StoreEvent): void {
    if (this.#ended || event.resourceVersion <= this.#lastResourceVersion) return;
    this.#lastResourceVersion = event.resourceVersion;
    const { resource, query } = this.#request;
    if (event.storage !== resource.storage) return;
    const now = event.type !== "DELETED" && matchesQuery(resource, query, event.object);
    const before = event.previous !== undefined && matchesQuery(resource, query, event.previous);
    let type: WatchEventType | undefined;
    if (event.type === "DELETED") type = before ? "DELETED" : undefined;
    else if (now) type = before ? "MODIFIED" : "ADDED";
    // An object that stops matching the selectors leaves this watch's view: kube-apiserver sends DELETED.
    else if (before) type = "DELETED";
    if (type !== undefined) this.#send(type, this.#api.view(resource, event.object));
  }

  #bookmark(annotations?: Record<string, string>): void {
    const { resource } = this.#request;
    this.#send("BOOKMARK", {
      kind: resource.kind,
      apiVersion: apiVersionOf(resource),
      metadata: {
        resourceVersion: String(this.#lastResourceVersion),
        ...(annotations === undefined ? {} : { annotations }),
      },
    } as KubeObject);
  }

  #send(type: WatchEventType, object: unknown): void {
    if (this.#ended || this.#frozen) return;
    const render = this.#request.render;
    if (render !== undefined && type !== "BOOKMARK" && type !== "ERROR") {
      object = render(object as KubeObject, this.#rendered === 0);
      this.#rendered += 1;
    }
    this.#res.write(`${JSON.stringify({ type, object })}\n`);
    if (this.#res.writableLength > this.#settings.maxBufferedBytes) {
      this.#settings.errorLog(
        `kubernetes: cutting off a watch of ${this.#request.resource.plural}: the client left ${this.#res.writableLength} bytes unread`,
      );
      // Destroyed, not ended: ending would keep the unread bytes until the client reads them, maybe never.
      // The client sees a broken connection and resumes from the last resourceVersion it processed.
      this.#cleanup();
      this.#res.destroy();
    }
  }

  /** Ends the stream cleanly: the client sees the response end and may resume from its last resourceVersion. */
  end(): void {
    if (this.#ended || this.#frozen) return;
    this.#cleanup();
    this.#res.end();
  }

  /** Destroys the connection under the stream: the client sees a reset, not an end. */
  reset(): void {
    if (this.#ended) return;
    this.#cleanup();
    this.#res.destroy();
  }

  /**
   * Goes silent, as a watch behind a partition: no events, no bookmarks, no end (the timeout waits too).
   * What it misses is not sent later: thaw() ends the stream, and the client resumes from what it has.
   */
  freeze(): void {
    this.#frozen = true;
  }

  /** Ends a frozen stream cleanly. */
  thaw(): void {
    if (!this.#frozen) return;
    this.#frozen = false;
    this.end();
  }

  #cleanup(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#unsubscribe();
    this.#stop.abort();
    this.#onEnd(this);
  }
}

/** The open watches of one server, to end them all (simulator close, or a scripted server-side break). */
export class WatchStreams {
  readonly #open = new Set<WatchStream>();

  open(api: KubeApi, res: ServerResponse, request: WatchRequest, settings: WatchSettings): WatchStream {
    const stream = new WatchStream(api, res, request, settings, (s) => this.#open.delete(s));
    this.#open.add(stream);
    stream.start();
    return stream;
  }

  get size(): number {
    return this.#open.size;
  }

  /** Ends every open watch; returns how many there were. Frozen ones are reset: they cannot end cleanly. */
  endAll(): number {
    const streams = [...this.#open];
    for (const stream of streams) stream.end();
    for (const stream of this.#open) stream.reset();
    return streams.length;
  }

  /** Destroys the connection of every open watch; returns how many there were. */
  resetAll(): number {
    const streams = [...this.#open];
    for (const stream of streams) stream.reset();
    return streams.length;
  }

  /** Freezes every open watch (kubeFreeze); watches opened later are held before they start. */
  freezeAll(): void {
    for (const stream of this.#open) stream.freeze();
  }

  /** Ends every frozen watch cleanly. */
  thawAll(): void {
    for (const stream of [...this.#open]) stream.thaw();
  }
}
