import { z } from "zod";

/** One scripted failure: the next `count` calls of `action` fail with `code`. */
export interface FailNextRule {
  /** EC2 action name, e.g. `AssignPrivateIpAddresses`, or `*` for any action. */
  readonly action: string;
  /** EC2 error code returned, e.g. `RequestLimitExceeded`. */
  readonly code: string;
  /** HTTP status returned (400-599). */
  readonly status: number;
  /** How many matching calls still fail; the rule disappears when it reaches 0. */
  readonly count: number;
  /** Error message; default `Injected failure (simulator).`. */
  readonly message?: string | undefined;
}

/** Verbs of the Kubernetes API, as `kubeErrorStatus` and `kubeHangVerbs` name them. */
export const kubeVerbs = ["get", "list", "watch", "create", "update", "patch", "delete"] as const;
export type KubeVerb = (typeof kubeVerbs)[number];

/** An error answered to Kubernetes API requests (`kubeErrorStatus`), as a `kind: Status` body. */
export interface KubeErrorStatus {
  /** HTTP status, 400-599, e.g. 500, 503, 403 or 404. */
  readonly code: number;
  /** The Status reason; default the API server's for the code (InternalError, ServiceUnavailable, Forbidden, ...). */
  readonly reason?: string | undefined;
  /** The Status message; default the API server's wording for the code. */
  readonly message?: string | undefined;
  /** Only requests for these resources (plural names such as `pods`, `ippools`); default every request. */
  readonly resources?: readonly string[] | undefined;
  /** Only requests with these verbs; default every verb. */
  readonly verbs?: readonly KubeVerb[] | undefined;
  /** Lifts itself after this many seconds; default: until cleared (`null`). */
  readonly seconds?: number | undefined;
  /** Set by the simulator from `seconds`: when it lifts (RFC 3339). */
  readonly expiresAt?: string | undefined;
}

/** Failures injected into the simulator, through the world file, `PUT /faults` or `handle.setFaults()`. */
export interface Faults {
  /**
   * Multiplies the burst and the refill rate of every EC2 token bucket. Default 1 (EC2's documented
   * limits); 0.05 makes AssignPrivateIpAddresses throttle after 5 calls; 0 throttles every call.
   */
  readonly throttleScale: number;
  /** Deterministic failures, consumed in order. Default none. */
  readonly failNext: readonly FailNextRule[];
  /** EC2 actions answered `UnauthorizedOperation` (HTTP 403), as if the IAM policy lacked them. Default none. */
  readonly deny: readonly string[];
  /** Delay before every EC2 answer, in milliseconds. Default 0. */
  readonly ec2LatencyMs: number;
  /** Delay before every IMDS answer, in milliseconds. Default 0. */
  readonly imdsLatencyMs: number;
  /**
   * The IMDSv2 token PUT never answers (the socket stays open until close()), as with a hop limit of 1 seen
   * from a pod. `true`: every instance; a list: those instance ids. Default false.
   */
  readonly imdsTokenHang: boolean | readonly string[];
  /** IMDS answers 403 to everything, as when the instance's metadata endpoint is disabled. Default false. */
  readonly imdsDisabled: boolean;
  /**
   * IMDS and the EC2 read calls show the state as of this many milliseconds ago (eventual consistency).
   * Writes always act on the current state. Default 0.
   */
  readonly staleReadsMs: number;
  /**
   * The Kubernetes API stops listening (new connections are refused) and its open connections, watches
   * included, are destroyed; `false` listens again on the same port. Default false.
   */
  readonly kubeRefuseConnections: boolean;
  /**
   * The Kubernetes API goes silent without a reset, as behind a partition: open watches send nothing (no
   * events, no bookmarks) and new requests get no answer. `false` serves again; the watches frozen meanwhile
   * are then ended cleanly (their clients resume from their last resourceVersion). Default false.
   */
  readonly kubeFreeze: boolean;
  /** The next N watches that resume from a resourceVersion get an ERROR event with 410 Expired, then end. Default 0. */
  readonly kubeExpireWatchResume: number;
  /** Every matching Kubernetes API request is answered with this error, until cleared or expired. Default null. */
  readonly kubeErrorStatus: KubeErrorStatus | null;
  /** Delay before every Kubernetes API answer (the start of a watch included), in milliseconds. Default 0. */
  readonly kubeLatencyMs: number;
  /** Kubernetes API requests with these verbs get no answer until the verb is dropped from the list. Default none. */
  readonly kubeHangVerbs: readonly KubeVerb[];
}

export const defaultFaults: Faults = {
  throttleScale: 1,
  failNext: [],
  deny: [],
  ec2LatencyMs: 0,
  imdsLatencyMs: 0,
  imdsTokenHang: false,
  imdsDisabled: false,
  staleReadsMs: 0,
  kubeRefuseConnections: false,
  kubeFreeze: false,
  kubeExpireWatchResume: 0,
  kubeErrorStatus: null,
  kubeLatencyMs: 0,
  kubeHangVerbs: [],
};

/** The fields that act on the Kubernetes API (refused for a world without one). */
export const kubeFaultFields = [
  "kubeRefuseConnections",
  "kubeFreeze",
  "kubeExpireWatchResume",
  "kubeErrorStatus",
  "kubeLatencyMs",
  "kubeHangVerbs",
] as const;

const kubeErrorStatusSchema = z.strictObject({
  code: z.number().int().min(400).max(599),
  reason: z
    .string()
    .regex(/^[A-Za-z]+$/, "must be a Status reason such as InternalError")
    .optional(),
  message: z.string().optional(),
  resources: z.array(z.string().min(1)).min(1).optional(),
  verbs: z.array(z.enum(kubeVerbs)).min(1).optional(),
  seconds: z.number().positive().optional(),
});

const failNextRuleSchema = z.strictObject({
  action: z.string().min(1),
  code: z.string().regex(/^[A-Za-z][A-Za-z0-9.]*$/, "must be an EC2 error code such as RequestLimitExceeded"),
  status: z.number().int().min(400).max(599),
  count: z.number().int().min(1),
  message: z.string().optional(),
});

/** Validates a partial Faults object (world file `faults:`, `PUT /faults`). */
export const partialFaultsSchema = z.strictObject({
  throttleScale: z.number().min(0).optional(),
  failNext: z.array(failNextRuleSchema).optional(),
  deny: z.array(z.string().min(1)).optional(),
  ec2LatencyMs: z.number().min(0).optional(),
  imdsLatencyMs: z.number().min(0).optional(),
  imdsTokenHang: z.union([z.boolean(), z.array(z.string().min(1))]).optional(),
  imdsDisabled: z.boolean().optional(),
  staleReadsMs: z.number().min(0).optional(),
  kubeRefuseConnections: z.boolean().optional(),
  kubeFreeze: z.boolean().optional(),
  kubeExpireWatchResume: z.number().int().min(0).optional(),
  kubeErrorStatus: kubeErrorStatusSchema.nullable().optional(),
  kubeLatencyMs: z.number().min(0).optional(),
  kubeHangVerbs: z.array(z.enum(kubeVerbs)).optional(),
});

/** Shallow merge: a field present in `patch` replaces the current one (lists are replaced, not appended). */
export function mergeFaults(current: Faults, patch: Partial<Faults>): Faults {
  const next: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value !== undefined) next[key] = value;
  }
  return next as unknown as Faults;
}

/** True when the token PUT of `instanceId` must hang. */
export function tokenHangs(faults: Faults, instanceId: string): boolean {
  const hang = faults.imdsTokenHang;
  return hang === true || (Array.isArray(hang) && hang.includes(instanceId));
}
