/**
 * The chained plugin's claims between its requests and the bridge's waves. ADD puts the claims of one
 * (container id, ifname) in and waits for the waves; the wave loop reads the node's pods through
 * `podsWith` (the claims in as if their pods carried them), makes the releases `releasesNow` gives, and
 * tells each wave's end (`waveEnded`, `waveFailed`). DEL takes the claims out, and queues their addresses for
 * release at once (no grace) unless another pod of the node, or another claim, carries them.
 *
 * Nothing here calls EC2: the waves do, at most one assign per ENI and family, so ADDs that arrive within the
 * wave window (IPMGR_BRIDGE_WAVE_WINDOW_MS) share one wave.
 */
import { coveringPrefix, family } from "../../eni/ip.js";
import type { Clock } from "../../eni/process/clock.js";
import type { Logger } from "../../eni/process/logger.js";
import type { EniState } from "../../eni/types.js";
import type { PodInfo } from "../kube/kube-api.js";
import type { Release } from "../state/desired-state.js";
import { podNetworks } from "../state/pod-networks.js";
import type { HeldAddresses } from "../waves/pod-address-count.js";
import type { BridgeRefusal } from "../waves/wave-plan.js";
import type { FailedAction } from "../waves/wave-report.js";
import { type CniClaim, type CniTombstone, podsWithClaims, samePod } from "./cni-pods.js";

/** How long a DEL's tombstone outlives its pod's absence from the view, ms: the watch may deliver it late. */
export const TOMBSTONE_KEEP_MS = 300_000;

/** What one wave left: the ENIs as it read them, what they hold after it, and why addresses were not held. */
export interface CniWaveEnd {
  readonly held: HeldAddresses;
  readonly multusEniIds: ReadonlySet<string>;
  readonly refusals: readonly BridgeRefusal[];
  readonly failures: readonly FailedAction[];
  /** Pods the bridge leaves alone (opted out, running the sidecar): their ADDs are not waited for. */
  readonly skipped: readonly { readonly namespace: string; readonly name: string }[];
}

/** Whether the ENI holds the address, or a delegated prefix of the ENI covers it. */
export function heldBy(
  held: HeldAddresses,
  eniId: string,
  address: string,
): "address" | "prefix" | undefined {
  if (held.keys.has(`${eniId} ${address}`)) return "address";
  const eni = held.enis.find((e) => e.eniId === eniId);
  const prefixes = [...(eni?.ipv4Prefixes ?? []), ...(eni?.ipv6Prefixes ?? [])];
  return prefixes.length > 0 && coveringPrefix(prefixes, address) !== undefined ? "prefix" : undefined;
}

interface QueuedRelease {
  readonly claim: CniClaim;
}

export class CniClaims {
  /** `containerId ifname` -> its claims. */
  readonly #claims = new Map<string, readonly CniClaim[]>();
  #tombstones: CniTombstone[] = [];
  #releases: QueuedRelease[] = [];
  #last: CniWaveEnd | undefined;
  /** `eniId address` -> why the last wave did not hold it; `*`: why the last wave failed whole. */
  #causes = new Map<string, string>();
  #waiters: (() => void)[] = [];
  #wake: (urgent: boolean) => void = () => undefined;
  #stopping = false;

  constructor(
    private readonly deps: { readonly clock: Clock; readonly logger: Logger; readonly nodeName: string },
  ) {}

  /**
   * The wave loop's wake-up (Bridge.changed), set by the bridge. `urgent`: a runtime waits on an ADD, so the
   * wave gathers for CNI_WAVE_WINDOW_MS at most (bridge.ts); ADDs that arrive while it runs join the next one.
   */
  onChange(wake: (urgent: boolean) => void): void {
    this.#wake = wake;
  }

  get stopping(): boolean {
    return this.#stopping;
  }

  /** The last wave's end; undefined before the first. */
  get last(): CniWaveEnd | undefined {
    return this.#last;
  }

  /** The node's Multus ENI with this MAC at the last wave. */
  multusEniOf(mac: string): EniState | undefined {
    const last = this.#last;
    return last?.held.enis.find((e) => e.mac.toLowerCase() === mac && last.multusEniIds.has(e.eniId));
  }

  /** The MACs of the node's Multus ENIs at the last wave. */
  multusMacs(): string[] {
    const last = this.#last;
    if (last === undefined) return [];
    return last.held.enis.filter((e) => last.multusEniIds.has(e.eniId)).map((e) => e.mac.toLowerCase());
  }

  /** Puts the claims of one (container id, ifname) in, replacing its earlier ones; a wave comes. */
  put(key: string, claims: readonly CniClaim[]): void {
    this.#claims.set(key, claims);
    this.#tombstones = this.#tombstones.filter(
      (t) =>
        !claims.some(
          (c) => c.address === t.address && c.pod.namespace === t.pod.namespace && c.pod.name === t.pod.name,
        ),
    );
    this.#releases = this.#releases.filter((r) => !claims.some((c) => c.address === r.claim.address));
    this.#wake(true);
  }

  /** Whether the last wave left the pod alone (opted out, or running the sidecar). */
  skipped(pod: { readonly namespace: string; readonly name: string }): boolean {
    return this.#last?.skipped.some((p) => p.namespace === pod.namespace && p.name === pod.name) === true;
  }

  /** The claims of one (container id, ifname), if any. */
  get(key: string): readonly CniClaim[] | undefined {
    return this.#claims.get(key);
  }

  /** DEL: takes the claims out and queues their release for the next wave. Unknown keys are fine. */
  drop(key: string): readonly CniClaim[] {
    const claims = this.#claims.get(key) ?? [];
    this.#claims.delete(key);
    const at = this.deps.clock.now();
    for (const claim of claims) {
      this.#tombstones.push({ pod: claim.pod, address: claim.address, at });
      this.#releases.push({ claim });
    }
    if (claims.length > 0) this.#wake(false);
    return claims;
  }

  /** Takes the claims out with no release and no tombstone: the pod is not the bridge's to place. */
  forget(key: string): void {
    this.#claims.delete(key);
  }

  /** Every claim. */
  all(): CniClaim[] {
    return [...this.#claims.values()].flat();
  }

  /** The node's pods with the claims in and the answered DELs' addresses out (cni-pods.ts). */
  podsWith(pods: readonly PodInfo[]): PodInfo[] {
    return podsWithClaims(pods, this.all(), this.#tombstones, this.deps.nodeName);
  }

  /**
   * The releases DEL queued that this wave makes: those no other pod of the node (`pods`, the view) or other
   * claim carries, that the ENI (`enis`, the wave's view) still holds as a single secondary address. Held back (kept queued) while `mayRelease`
   * is false (the view is stale or a live pod cannot be read: the release guard holds every release then).
   */
  releasesNow(pods: readonly PodInfo[], enis: readonly EniState[], mayRelease: boolean): Release[] {
    const now = this.deps.clock.now();
    this.#tombstones = this.#tombstones.filter(
      (t) => now - t.at < TOMBSTONE_KEEP_MS || pods.some((p) => samePod(p, t.pod)),
    );
    if (!mayRelease || this.#releases.length === 0) return [];
    const carried = new Set<string>();
    for (const pod of this.podsWith(pods))
      for (const attachment of podNetworks(pod).attachments)
        for (const a of attachment.addresses) carried.add(a);
    const out: Release[] = [];
    for (const { claim } of this.#releases.splice(0)) {
      if (carried.has(claim.address)) {
        this.deps.logger.info(
          { address: claim.address, eniId: claim.eniId, pod: `${claim.pod.namespace}/${claim.pod.name}` },
          "CNI DEL: not released, another pod of this node or another claim carries the address",
        );
        continue;
      }
      const eni = enis.find((e) => e.eniId === claim.eniId);
      // A single address only: one inside a delegated prefix stays with the prefix.
      if (eni === undefined || ![...eni.ipv4s, ...eni.ipv6s].includes(claim.address)) continue;
      if (eni.primaryIpv4 === claim.address) continue;
      out.push({
        eniId: claim.eniId,
        address: claim.address,
        family: family(claim.address),
        reason: `CNI DEL of pod ${claim.pod.namespace}/${claim.pod.name} (${claim.interfaceName})`,
      });
    }
    return out;
  }

  /** The wave's own releases and, after them, those of `releasesNow` it does not make already. */
  withReleases(
    releases: readonly Release[],
    pods: readonly PodInfo[],
    enis: readonly EniState[],
    mayRelease: boolean,
  ): Release[] {
    const own = new Set(releases.map((r) => `${r.eniId} ${r.address}`));
    const more = this.releasesNow(pods, enis, mayRelease).filter((r) => !own.has(`${r.eniId} ${r.address}`));
    return [...releases, ...more];
  }

  /** A wave ended: what it held and why it did not hold the rest; the ADDs waiting look again. */
  waveEnded(end: CniWaveEnd): void {
    this.#last = end;
    const causes = new Map<string, string>();
    for (const r of end.refusals) causes.set(`* ${r.address}`, r.detail);
    for (const f of end.failures) {
      const message = f.error instanceof Error ? f.error.message : String(f.error);
      for (const address of f.action.addresses) causes.set(`${f.action.eniId} ${address}`, message);
    }
    this.#causes = causes;
    this.#release();
  }

  /** A wave failed whole (EC2 throttled or unavailable after its retries, IMDS failing): the cause is kept. */
  waveFailed(message: string): void {
    this.#causes = new Map([...this.#causes, ["*", message]]);
    this.#release();
  }

  /** Why the address is not held on the ENI yet, as the last wave told it. */
  causeOf(eniId: string, address: string): string {
    return (
      this.#causes.get(`${eniId} ${address}`) ??
      this.#causes.get(`* ${address}`) ??
      this.#causes.get("*") ??
      "no wave has assigned it yet"
    );
  }

  /** Resolves at the end of the next wave (or at stop); a wave is asked for. */
  nextWave(): Promise<void> {
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      this.#wake(true);
    });
  }

  /** The bridge stops: every ADD waiting is woken (and answers code 11). */
  stop(): void {
    this.#stopping = true;
    this.#release();
  }

  #release(): void {
    for (const resolve of this.#waiters.splice(0)) resolve();
  }
}
