import { randomBytes } from "node:crypto";
import type { Clock } from "../../eni/process/clock.js";

/** IMDSv2 session tokens of one instance, each valid for its TTL. */
export class TokenStore {
  readonly #clock: Clock;
  /** token -> expiry, in milliseconds since the epoch. */
  readonly #tokens = new Map<string, number>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  issue(ttlSeconds: number): string {
    const now = this.#clock.now();
    for (const [token, expiry] of this.#tokens) if (expiry <= now) this.#tokens.delete(token);
    const token = randomBytes(33).toString("base64url");
    this.#tokens.set(token, now + ttlSeconds * 1000);
    return token;
  }

  isValid(token: string): boolean {
    const expiry = this.#tokens.get(token);
    return expiry !== undefined && this.#clock.now() < expiry;
  }
}
