/**
 * Scripted writes (the world file, the control API) in progress: the kubelet and scheduler stand-ins take the
 * pods such a write makes as given, and neither start nor bind them. One marker, shared by both stand-ins, so
 * that the cluster marks a write once.
 */
export class GivenWrites {
  #depth = 0;

  /** Whether a scripted write is running now (store listeners run inside it, synchronously). */
  get active(): boolean {
    return this.#depth > 0;
  }

  /** Runs `write` as a scripted write. */
  during<T>(write: () => T): T {
    this.#depth += 1;
    try {
      return write();
    } finally {
      this.#depth -= 1;
    }
  }
}
