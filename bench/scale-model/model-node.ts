/**
 * One node of the scale model: its pods (one Multus interface each) and what its ENIs hold, written in one
 * template that every node shares. The planners see only the node's own ENIs, so each node's addresses are
 * written in 198.51.100.0/24 (a documentation range) as if it were alone: the planner's input, and so its
 * answer, is the same for two nodes in the same state, which lets the model ask it once per state. The
 * state is kept by last octet in typed arrays; the planner's input is built from it only when asked.
 *
 * Template: ENI `eni-0` (device 0, the VPC CNI's) and four Multus ENIs `eni-1` to `eni-4` (the bridge
 * configured with IPMGR_BRIDGE_DEVICE_INDEXES=1,2,3,4), primaries 198.51.100.4 to .8; network k (NAD
 * `cnf/multus-k`, master eth k, whereabouts with `node_slice_size` /27) on eni-k, whose NodeSlicePool gives
 * the node the slice 198.51.100.(32·k)/27, two /28 prefixes. (The range is written as that one slice: the
 * other nodes' allocations do not enter a node's plan.) Pod slot i sits on network 1 + (i mod 4) with
 * address slice + 1 + ⌊i/4⌋.
 */
import type { EniState, PodInterface } from "../../src/eni/types.js";
import type { NadInfo, NodeSlicePoolInfo } from "../../src/ipam-whereabouts-bridge/kube/kube-api.js";
import type { Release } from "../../src/ipam-whereabouts-bridge/state/desired-state.js";
import type { ModelAction, NodeWaveInput } from "./node-wave.js";

export const MULTUS_ENIS = 4;
export const SUBNET = "198.51.100.0/24";
const NET = "198.51.100.";
const eniIdOf = (d: number) => `eni-${d}`;
const macOf = (d: number) => `02:00:00:00:00:0${d}`;
const PRIMARY_OCTET = 4;
const sliceBase = (k: number) => 32 * k;
const NODE_NAME = "node-model.ec2.internal";
const networks = Array.from({ length: MULTUS_ENIS }, (_, i) => i + 1);
const NADS: readonly NadInfo[] = networks.map((k) => ({
  namespace: "cnf",
  name: `multus-${k}`,
  config: JSON.stringify({
    cniVersion: "0.3.1",
    name: `multus-${k}-net`,
    type: "ipvlan",
    master: `eth${k}`,
    ipam: { type: "whereabouts", range: `${NET}${sliceBase(k)}/27`, node_slice_size: "/27" },
  }),
}));
const SLICE_POOLS: readonly NodeSlicePoolInfo[] = networks.map((k) => ({
  namespace: "cnf",
  name: `multus-${k}-net`,
  range: `${NET}${sliceBase(k)}/27`,
  sliceSize: "/27",
  allocations: [{ sliceRange: `${NET}${sliceBase(k)}/27`, nodeName: NODE_NAME }],
  ownerNads: [`multus-${k}`],
}));
const HOST_MACS: ReadonlyMap<string, string> = new Map(networks.map((k) => [`eth${k}`, macOf(k)]));
const MULTUS_ENI_IDS: ReadonlySet<string> = new Set(networks.map(eniIdOf));
const ADDRESSES = Array.from({ length: 256 }, (_, o) => `${NET}${o}`);
const PREFIXES = Array.from({ length: 16 }, (_, b) => `${NET}${b * 16}/28`);
const NONE = 0;

/** The Multus ENI (1..4) of a pod slot. */
export const eniOfSlot = (slot: number) => 1 + (slot % MULTUS_ENIS);
/** The last octet of the address a pod slot gets from its node's slice. */
export const sliceOctetOf = (slot: number) => sliceBase(eniOfSlot(slot)) + 1 + Math.floor(slot / MULTUS_ENIS);
/** The address of a last octet in the template. */
export const addressOf = (octet: number) => ADDRESSES[octet] as string;

/** A wave's input: a key equal for equal inputs, the input itself (built when asked), the next release due. */
export interface WaveView {
  readonly key: string;
  readonly input: () => NodeWaveInput;
  readonly nextReleaseAt: number | undefined;
}

function octetOf(address: string): number {
  const octet = Number.parseInt(address.slice(NET.length), 10);
  if (!address.startsWith(NET) || !(octet >= 0 && octet < 256)) {
    throw new Error(`scale model: ${address} is not in the template ${SUBNET}`);
  }
  return octet;
}

function blockOf(prefix: string): number {
  if (!prefix.endsWith("/28")) throw new Error(`scale model: ${prefix} is not a /28`);
  return octetOf(prefix.slice(0, -3)) >> 4;
}

function deviceOf(eniId: string): number {
  const d = Number(eniId.slice("eni-".length));
  if (!Number.isInteger(d) || d < 0 || d > MULTUS_ENIS) throw new Error(`scale model: unknown ENI ${eniId}`);
  return d;
}

export class ModelNode {
  /** Per pod slot: the last octet of its address; NONE while no pod runs there. */
  readonly #pods: Uint8Array;
  /** Per last octet: 1 + the device index of the ENI holding it singly (the primaries aside); NONE. */
  readonly #held = new Uint8Array(256);
  /** Per /28 block of the template: 1 + the device index of the ENI holding it as a prefix; NONE. */
  readonly #prefixes = new Uint8Array(16);
  /** Per last octet: since when (ms) a held address is used by no pod; NaN while used or not held. */
  readonly #unusedSince = new Float64Array(256).fill(Number.NaN);
  #running = 0;
  #routed = 0;
  /** Bumped by every change of the pods or the ENIs: a wave input is reused while it stays the same. */
  #version = 0;
  #cached: { version: number; graceMs: number; wave: WaveView } | undefined;

  constructor(
    /** How many pods the node runs when all are up. */
    readonly podCount: number,
    readonly addressesPerEni: number,
  ) {
    this.#pods = new Uint8Array(podCount);
  }

  /** Whether all its pods are up and every address is routed to the ENI behind its interface. */
  get converged(): boolean {
    return this.#running === this.podCount && this.#routed === this.podCount;
  }

  #recount(): void {
    this.#version += 1;
    let running = 0;
    let routed = 0;
    for (let slot = 0; slot < this.podCount; slot++) {
      const octet = this.#pods[slot] as number;
      if (octet === NONE) continue;
      running += 1;
      const holder = 1 + eniOfSlot(slot);
      if (this.#held[octet] === holder || this.#prefixes[octet >> 4] === holder) routed += 1;
    }
    this.#running = running;
    this.#routed = routed;
  }

  /** A pod starts in `slot` with the address of `octet` (whereabouts gave it). */
  startPod(slot: number, octet: number): void {
    this.#pods[slot] = octet;
    this.#unusedSince[octet] = Number.NaN;
    this.#recount();
  }

  /** The pod in `slot` goes away; its address, if held singly, becomes unused now. Returns its octet. */
  stopPod(slot: number, nowMs: number): number {
    const octet = this.#pods[slot] as number;
    this.#pods[slot] = NONE;
    if (octet !== NONE && this.#held[octet] !== NONE) this.#unusedSince[octet] = nowMs;
    this.#recount();
    return octet;
  }

  /** Whether a pod of the node uses the address of `octet`, or one of its ENIs holds it singly. */
  uses(octet: number): boolean {
    return this.#held[octet] !== NONE || this.#pods.includes(octet);
  }

  /** Sets what the ENIs hold directly (a converged node before the model starts): no call. */
  holdAll(mode: "addresses" | "prefixes"): void {
    for (let slot = 0; slot < this.podCount; slot++) {
      const octet = this.#pods[slot] as number;
      if (octet === NONE) continue;
      if (mode === "addresses") this.#held[octet] = 1 + eniOfSlot(slot);
      else this.#prefixes[octet >> 4] = 1 + eniOfSlot(slot);
    }
    this.#recount();
  }

  /**
   * What the bridge sees at a wave at `nowMs`: a key equal for equal inputs, the input itself (built when
   * asked), and when the next pending release is due. Releases follow desired-state's rule for a trusted
   * view: a held secondary address that no pod on the node uses, for `graceMs`.
   */
  waveInput(nowMs: number, graceMs: number): WaveView {
    // Unchanged since the last wave, and no release's grace ended in between: the same input.
    const cached = this.#cached;
    if (
      cached !== undefined &&
      cached.version === this.#version &&
      cached.graceMs === graceMs &&
      !(nowMs >= (cached.wave.nextReleaseAt ?? Number.POSITIVE_INFINITY))
    ) {
      return cached.wave;
    }
    const wave = this.#waveInput(nowMs, graceMs);
    this.#cached = { version: this.#version, graceMs, wave };
    return wave;
  }

  #waveInput(nowMs: number, graceMs: number): WaveView {
    const inUse = new Uint8Array(256);
    for (const octet of this.#pods) inUse[octet] = 1;
    const due = new Uint8Array(256);
    let nextReleaseAt: number | undefined;
    for (let octet = 0; octet < 256; octet++) {
      if (this.#held[octet] === NONE || inUse[octet] === 1) continue;
      let since = this.#unusedSince[octet] as number;
      if (Number.isNaN(since)) {
        since = nowMs;
        this.#unusedSince[octet] = nowMs;
      }
      if (nowMs - since >= graceMs) due[octet] = 1;
      else nextReleaseAt = Math.min(nextReleaseAt ?? Number.POSITIVE_INFINITY, since + graceMs);
    }
    const key =
      String.fromCharCode(...this.#pods) +
      String.fromCharCode(...this.#held) +
      String.fromCharCode(...this.#prefixes) +
      String.fromCharCode(...due);
    return { key, input: () => this.#input(due), nextReleaseAt };
  }

  #input(due: Uint8Array): NodeWaveInput {
    const interfaces: PodInterface[] = [];
    for (let slot = 0; slot < this.podCount; slot++) {
      const octet = this.#pods[slot] as number;
      if (octet === NONE) continue;
      interfaces.push({
        name: `cnf/pod-${slot}/net1`,
        mac: macOf(eniOfSlot(slot)),
        addresses: [addressOf(octet)],
      });
    }
    const releases: Release[] = [];
    const enis: EniState[] = [];
    for (let d = 0; d <= MULTUS_ENIS; d++) {
      const primary = addressOf(PRIMARY_OCTET + d);
      const ipv4s = [primary];
      for (let octet = 0; octet < 256; octet++) {
        if (this.#held[octet] !== 1 + d) continue;
        ipv4s.push(addressOf(octet));
        if (due[octet] === 1) {
          releases.push({
            eniId: eniIdOf(d),
            address: addressOf(octet),
            family: 4,
            reason: "no pod uses it (model)",
          });
        }
      }
      const ipv4Prefixes: string[] = [];
      for (let block = 0; block < 16; block++)
        if (this.#prefixes[block] === 1 + d) ipv4Prefixes.push(PREFIXES[block] as string);
      enis.push({
        eniId: eniIdOf(d),
        mac: macOf(d),
        deviceIndex: d,
        subnetId: "subnet-model",
        subnetIpv4Cidrs: [SUBNET],
        subnetIpv6Cidrs: [],
        primaryIpv4: primary,
        ipv4s,
        ipv6s: [],
        ipv4Prefixes,
        ipv6Prefixes: [],
      });
    }
    return {
      nodeName: NODE_NAME,
      interfaces,
      enis,
      multusEniIds: MULTUS_ENI_IDS,
      addressesPerEni: this.addressesPerEni,
      allowedCidrs: [SUBNET],
      releases,
      nads: NADS,
      slicePools: SLICE_POOLS,
      hostMacs: HOST_MACS,
    };
  }

  /** EC2 accepted `action`: the ENIs hold what it says. */
  apply(action: ModelAction): void {
    const holder = 1 + deviceOf(action.eniId);
    switch (action.kind) {
      case "assign-ipv4":
        for (const a of action.addresses) {
          const octet = octetOf(a);
          this.#held[octet] = holder;
          this.#unusedSince[octet] = Number.NaN;
        }
        break;
      case "unassign-ipv4":
        for (const a of action.addresses) {
          const octet = octetOf(a);
          if (this.#held[octet] === holder) this.#held[octet] = NONE;
          this.#unusedSince[octet] = Number.NaN;
        }
        break;
      case "assign-prefixes":
        for (const p of action.prefixes) this.#prefixes[blockOf(p)] = holder;
        break;
      case "unassign-prefixes":
        for (const p of action.prefixes)
          if (this.#prefixes[blockOf(p)] === holder) this.#prefixes[blockOf(p)] = NONE;
        break;
      default:
        throw new Error(`scale model: ${action.kind} is not modelled (IPv4 only)`);
    }
    this.#recount();
  }
}
