/** The ENIs of this instance as IMDS reports them, and the wait for IMDS to reflect an assignment. */

import { TimeoutError } from "./errors/timeout-error.js";
import type { Imds } from "./imds.js";
import { coveringPrefix, tryCanonical } from "./ip.js";
import type { Clock } from "./process/clock.js";
import type { EniState, IpFamily } from "./types.js";

/**
 * Reads the ENIs attached to this instance: the MAC list once, then every (requested) MAC in parallel.
 * `macs` limits the read to those MACs (any case); a requested MAC that is not attached is left out, so the
 * caller, which knows the pod interface behind it, raises EniNotFoundError. Result order follows IMDS.
 */
export async function readEnis(imds: Imds, macs?: readonly string[]): Promise<EniState[]> {
  const attached = await imds.macs();
  const wanted = macs === undefined ? undefined : new Set(macs.map((m) => m.toLowerCase()));
  const selected = wanted === undefined ? attached : attached.filter((m) => wanted.has(m));
  return Promise.all(selected.map((mac) => readEni(imds, mac)));
}

/**
 * Every ENI of the instance, read in full only where a pod interface needs it (`detailedMacs`). The others
 * get three reads, id, IPv4 addresses and IPv4 prefixes: enough to protect their primary addresses and
 * prefixes and to name them, at a third of the IMDS requests (IMDS is rate limited per instance, and `init` start-up waits on it).
 */
export async function readInstanceEnis(imds: Imds, detailedMacs: readonly string[]): Promise<EniState[]> {
  const attached = await imds.macs();
  const detailed = new Set(detailedMacs.map((m) => m.toLowerCase()));
  return Promise.all(
    attached.map((mac) => (detailed.has(mac) ? readEni(imds, mac) : readEniSummary(imds, mac))),
  );
}

async function readEniSummary(imds: Imds, mac: string): Promise<EniState> {
  // The IPv4 prefixes too: a pod address inside one is another ENI's, and the planner refuses it up front.
  const [eniId, ipv4s, ipv4Prefixes] = await Promise.all([
    imds.interfaceId(mac),
    imds.localIpv4s(mac),
    imds.ipv4Prefixes(mac),
  ]);
  return {
    eniId,
    mac,
    deviceIndex: -1,
    subnetId: "",
    subnetIpv4Cidrs: [],
    subnetIpv6Cidrs: [],
    primaryIpv4: ipv4s[0],
    ipv4s,
    ipv6s: [],
    ipv4Prefixes,
    summary: true,
  };
}

async function readEni(imds: Imds, mac: string): Promise<EniState> {
  const [
    eniId,
    deviceIndex,
    subnetId,
    subnetIpv4Cidrs,
    subnetIpv6Cidrs,
    ipv4s,
    ipv6s,
    ipv4Prefixes,
    ipv6Prefixes,
  ] = await Promise.all([
    imds.interfaceId(mac),
    imds.deviceNumber(mac),
    imds.subnetId(mac),
    imds.subnetIpv4Cidrs(mac),
    imds.subnetIpv6Cidrs(mac),
    imds.localIpv4s(mac),
    imds.ipv6s(mac),
    imds.ipv4Prefixes(mac),
    imds.ipv6Prefixes(mac),
  ]);
  return {
    eniId,
    mac,
    deviceIndex,
    subnetId,
    subnetIpv4Cidrs,
    subnetIpv6Cidrs,
    primaryIpv4: ipv4s[0],
    ipv4s,
    ipv6s,
    ipv4Prefixes,
    ipv6Prefixes,
  };
}

/** An address that must show on the ENI with this MAC. */
export interface ExpectedAddress {
  readonly mac: string;
  readonly address: string;
  readonly family: IpFamily;
}

export interface ConfirmOptions {
  /** Give up after this many milliseconds. */
  readonly timeoutMs: number;
  /** Wait between two reads of IMDS, in milliseconds. */
  readonly intervalMs: number;
  readonly clock: Clock;
  /** Cancels the wait; the promise then rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

/**
 * Polls IMDS `local-ipv4s`/`ipv6s` of each MAC until every expected address shows, or lies inside one of the
 * MAC's `ipv4-prefix`/`ipv6-prefix` (IMDS reflects EC2 assignments asynchronously, typically within a few
 * seconds). Throws TimeoutError naming what is missing.
 */
export async function confirmHeld(
  imds: Imds,
  expected: readonly ExpectedAddress[],
  options: ConfirmOptions,
): Promise<void> {
  const { clock, signal, timeoutMs, intervalMs } = options;
  const started = clock.now();
  const byMac = new Map<string, { ipv4: Set<string>; ipv6: Set<string> }>();
  for (const e of expected) {
    const mac = e.mac.toLowerCase();
    const entry = byMac.get(mac) ?? { ipv4: new Set<string>(), ipv6: new Set<string>() };
    (e.family === 4 ? entry.ipv4 : entry.ipv6).add(tryCanonical(e.address) ?? e.address.toLowerCase());
    byMac.set(mac, entry);
  }
  if (byMac.size === 0) return;

  for (;;) {
    signal?.throwIfAborted();
    const missing = await Promise.all(
      [...byMac].map(async ([mac, want]) => {
        const [ipv4s, ipv6s] = await Promise.all([
          want.ipv4.size > 0 ? imds.localIpv4s(mac) : Promise.resolve([]),
          want.ipv6.size > 0 ? imds.ipv6s(mac) : Promise.resolve([]),
        ]);
        const held = new Set([...ipv4s, ...ipv6s]);
        const absent = [...want.ipv4, ...want.ipv6].filter((a) => !held.has(a));
        if (absent.length === 0) return { mac, addresses: absent };
        // Not listed one by one: held all the same when a prefix of the ENI covers it (read only then).
        const [v4, v6] = await Promise.all([
          absent.some((a) => want.ipv4.has(a)) ? imds.ipv4Prefixes(mac) : Promise.resolve([]),
          absent.some((a) => want.ipv6.has(a)) ? imds.ipv6Prefixes(mac) : Promise.resolve([]),
        ]);
        const prefixes = [...v4, ...v6];
        return { mac, addresses: absent.filter((a) => coveringPrefix(prefixes, a) === undefined) };
      }),
    );
    const open = missing.filter((m) => m.addresses.length > 0);
    if (open.length === 0) return;

    const elapsed = clock.now() - started;
    if (elapsed >= timeoutMs) {
      // Name ENIs by id as users know them; one extra read per ENI, only on this failure path.
      const named = await Promise.all(
        open.map(async (m) => `${m.addresses.join(", ")} on ${await imds.interfaceId(m.mac)} (MAC ${m.mac})`),
      );
      throw new TimeoutError(
        `IMDS to show ${named.join("; ")}`,
        timeoutMs,
        "EC2 accepted the assignment but IMDS has not reflected it yet. Check with aws ec2 describe-network-interfaces " +
          "whether the addresses are on the ENI; if they moved to another ENI, another node claimed them.",
      );
    }
    await clock.sleep(Math.min(intervalMs, timeoutMs - elapsed), signal);
  }
}
