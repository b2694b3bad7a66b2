/** What became of one network in a pass of attach mode's calls (attach-apply.ts), as attach-mode.ts reports it. */
import type { AttachSlot } from "./client-token.js";
import type { AttachError } from "./errors/attach-error.js";

/** What became of one network, with the EC2 calls made for it (each retry counted). */
export type AttachOutcome =
  | {
      readonly kind: "attached";
      readonly network: string;
      readonly slot: AttachSlot;
      readonly eniId: string;
      readonly mac: string;
      readonly attachmentId: string | undefined;
      readonly calls: number;
      /** Whether this pass attached it (made or again). */
      readonly changed: boolean;
      /** The ENI at the slot is not this network's (attach-plan.ts): the sentence. */
      readonly foreign?: string;
      /** A DeleteOnTermination or SourceDestCheck call that failed: the ENI is attached, the plan sets it again. */
      readonly problems: readonly AttachError[];
    }
  | { readonly kind: "waiting"; readonly network: string; readonly slot: AttachSlot; readonly detail: string }
  | {
      readonly kind: "refused";
      readonly network: string;
      readonly slot: AttachSlot;
      readonly detail: string;
      /** EC2's error code; undefined when the plan refused before any call. */
      readonly code: string | undefined;
      readonly error?: AttachError;
      readonly calls: number;
    }
  | {
      readonly kind: "retry-later";
      readonly network: string;
      readonly slot: AttachSlot;
      readonly detail: string;
      readonly code: string;
      readonly error: AttachError;
      readonly calls: number;
    };
