/**
 * When the sidecar says a reconcile failed and when it says it works again. Pure bookkeeping: the loop says
 * what failed (the error's key and the addresses of the actions EC2 refused) and, after a step that worked,
 * which of those addresses are still outstanding.
 *
 * A step that works is not yet a recovery. A release EC2 denied is retried on its own backoff (1 s doubling
 * to 60 s), and the steps in between, which do not try it, work: saying "works again" after each of them,
 * and "failed" again at the next try, told an operator five times in 30 s that a denied release had
 * recovered. So a failure stays open until what failed has been done (the address held, the release made),
 * or has nothing left to do (the address left the interface, came back before its release); and it is
 * logged once per distinct error, however often it recurs, with the count carried to the next line.
 */
export interface FailureRecord {
  /** The error's first sentence (for logs, /healthz, /readyz). */
  readonly description: string;
  /** How many steps failed with this error since it was first seen. */
  readonly count: number;
}

/** What a failed step means for the log. */
export interface FailedStep {
  /** This error is new (none was open, or another was): log it. */
  readonly log: boolean;
  readonly count: number;
  /** The different error this one replaces, with its count. */
  readonly previous?: FailureRecord;
}

interface Open {
  readonly key: string;
  readonly description: string;
  count: number;
  /** Addresses of the actions that failed; the failure is over when none is outstanding any more. */
  readonly addresses: Set<string>;
}

export class ReconcileFailures {
  #open: Open | undefined;

  /** The failure still open, if any. */
  get open(): FailureRecord | undefined {
    const open = this.#open;
    return open === undefined ? undefined : { description: open.description, count: open.count };
  }

  /**
   * A step failed with the error `key` (`description` for people) on the actions of `addresses` (none when
   * the step ended before any action, say IMDS or EC2 not answering).
   */
  failed(key: string, description: string, addresses: readonly string[]): FailedStep {
    const open = this.#open;
    if (open !== undefined && open.key === key) {
      open.count += 1;
      for (const address of addresses) open.addresses.add(address);
      return { log: false, count: open.count };
    }
    this.#open = { key, description, count: 1, addresses: new Set(addresses) };
    return {
      log: true,
      count: 1,
      ...(open === undefined ? {} : { previous: { description: open.description, count: open.count } }),
    };
  }

  /**
   * A step worked. `outstanding(address)` tells whether what failed on `address` is still to be done. Returns
   * the failure that is over now, for the recovery line; undefined while it is still open, or none was.
   */
  succeeded(outstanding: (address: string) => boolean): FailureRecord | undefined {
    const open = this.#open;
    if (open === undefined) return undefined;
    for (const address of open.addresses) if (!outstanding(address)) open.addresses.delete(address);
    if (open.addresses.size > 0) return undefined;
    this.#open = undefined;
    return { description: open.description, count: open.count };
  }
}
