import { type Clock, systemClock } from "../eni/process/clock.js";
import { type FailNextRule, type Faults, mergeFaults } from "./faults.js";

/** The current faults, shared by the EC2, IMDS, Kubernetes and control servers. */
export class FaultState {
  #faults: Faults;
  readonly #clock: Clock;
  readonly #listeners = new Set<(faults: Faults) => void>();

  constructor(initial: Faults, clock: Clock = systemClock) {
    this.#clock = clock;
    this.#faults = this.#stamped(initial);
  }

  /** The faults now; a `kubeErrorStatus` whose time is up reads as null. */
  get(): Faults {
    const error = this.#faults.kubeErrorStatus;
    if (error?.expiresAt !== undefined && Date.parse(error.expiresAt) <= this.#clock.now()) {
      this.#faults = { ...this.#faults, kubeErrorStatus: null };
    }
    return this.#faults;
  }

  set(patch: Partial<Faults>): void {
    this.#faults = this.#stamped(mergeFaults(this.#faults, patch));
    for (const listener of [...this.#listeners]) listener(this.#faults);
  }

  /** Calls `listener` after every set(), with the new faults. Returns the unsubscribe function. */
  subscribe(listener: (faults: Faults) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** A kubeErrorStatus with `seconds` and no `expiresAt` gets one, counted from now. */
  #stamped(faults: Faults): Faults {
    const error = faults.kubeErrorStatus;
    if (error === null || error.seconds === undefined || error.expiresAt !== undefined) return faults;
    const expiresAt = new Date(this.#clock.now() + error.seconds * 1000).toISOString();
    return { ...faults, kubeErrorStatus: { ...error, expiresAt } };
  }

  /** Consumes one use of the first failNext rule matching `action` (or `*`), and returns it. */
  takeFailNext(action: string): FailNextRule | undefined {
    const rules = this.#faults.failNext;
    const index = rules.findIndex((r) => r.count > 0 && (r.action === action || r.action === "*"));
    const rule = rules[index];
    if (rule === undefined) return undefined;
    const remaining = rules
      .map((r, i) => (i === index ? { ...r, count: r.count - 1 } : r))
      .filter((r) => r.count > 0);
    this.#faults = { ...this.#faults, failNext: remaining };
    return rule;
  }

  /** Consumes one of `kubeExpireWatchResume`; true when this watch resume must get 410. */
  takeExpireWatchResume(): boolean {
    const left = this.#faults.kubeExpireWatchResume;
    if (left <= 0) return false;
    this.#faults = { ...this.#faults, kubeExpireWatchResume: left - 1 };
    return true;
  }
}
