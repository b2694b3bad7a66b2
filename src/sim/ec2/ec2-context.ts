import type { AttachmentEvent } from "../hotplug.js";
import type { SimState } from "../sim-state.js";
import type { StateStore } from "../state-store.js";
import type { Topology } from "../topology.js";
import type { QueryParams } from "./query-params.js";

/** What an EC2 action handler gets for one request. */
export interface Ec2Context {
  readonly topology: Topology;
  /** Writes: `store.write((draft) => model(draft, ...))`. Validation must read the draft, never a stale view. */
  readonly store: StateStore;
  readonly params: QueryParams;
  /** The state Describe/Get calls see: the current one, or an older one under the staleReadsMs fault. */
  readonly readState: () => SimState;
  /** A fresh id such as `scr-00000000000000001`, unique within this simulator. */
  readonly nextId: (prefix: string) => string;
  /** Clock time, ms since the epoch. */
  readonly now: () => number;
  /** Told of each attach and detach once committed (the hot-plug stand-in, hotplug.ts). */
  readonly attachments: (event: AttachmentEvent) => void;
}

/** Handles one action; returns the members of `<ActionResponse>` after `requestId`. Throws Ec2ApiError. */
export type Ec2Handler = (ctx: Ec2Context) => string;
