import { type FailNextRule, type Faults, mergeFaults } from "./faults.js";

/** The current faults, shared by the EC2, IMDS and control servers. */
export class FaultState {
  #faults: Faults;

  constructor(initial: Faults) {
    this.#faults = initial;
  }

  get(): Faults {
    return this.#faults;
  }

  set(patch: Partial<Faults>): void {
    this.#faults = mergeFaults(this.#faults, patch);
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
}
