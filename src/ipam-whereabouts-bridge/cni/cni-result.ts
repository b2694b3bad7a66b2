/**
 * What the bridge answers the chained CNI plugin: the exit code, then the plugin's stdout (a CNI result or
 * error JSON, in the netconf's cniVersion). Pure.
 *
 * The error codes: 1 to 11 are the CNI spec's own, 100 and above this plugin's (docs/cni-plugin.md).
 */
import { CniError } from "./errors/cni-error.js";

export const CniCode = {
  /** The netconf's cniVersion is not one the plugin speaks. */
  incompatibleVersion: 1,
  /** A CNI_ variable is missing or invalid (CNI_COMMAND, CNI_ARGS). */
  invalidEnvironment: 4,
  /** The request or the netconf cannot be decoded (not framed, not JSON, not complete in time). */
  decode: 6,
  /** A netconf value is invalid (no prevResult on ADD, a deadlineSeconds out of range). */
  invalidNetconf: 7,
  /** Try again later: the bridge is stopping, or EC2 did not confirm the address within the deadline. */
  tryAgainLater: 11,
  /** ADD: a sandbox interface's MAC is the MAC of no Multus ENI of this node. */
  notMultusEni: 100,
  /** CHECK: EC2 no longer holds the address on the pod's ENI. */
  addressNotHeld: 101,
  /** An error of the bridge itself (a bug, or a failed EC2 read for CHECK). */
  internal: 102,
} as const;

/** The versions the plugin speaks (the host binary answers VERSION with the same list). */
export const SUPPORTED_VERSIONS: readonly string[] = ["0.3.0", "0.3.1", "0.4.0", "1.0.0"];

/** One answer: the plugin's exit code and stdout. */
export interface CniAnswer {
  readonly exitCode: number;
  readonly body: string;
}

/** ADD's success: the previous result, unchanged (re-serialized from its parsed JSON). */
export function passThrough(prevResult: unknown): CniAnswer {
  return { exitCode: 0, body: JSON.stringify(prevResult) };
}

/** DEL's and CHECK's success: exit 0, no output. */
export const EMPTY_SUCCESS: CniAnswer = { exitCode: 0, body: "" };

/** The CNI error JSON of `error`, in `cniVersion` (the netconf's; "1.0.0" when it could not be read). */
export function errorAnswer(error: CniError, cniVersion: string | undefined): CniAnswer {
  const version = cniVersion !== undefined && SUPPORTED_VERSIONS.includes(cniVersion) ? cniVersion : "1.0.0";
  const json: Record<string, unknown> = { cniVersion: version, code: error.code, msg: error.message };
  if (error.details !== "") json.details = error.details;
  return { exitCode: 1, body: JSON.stringify(json) };
}

/** Any failure as a CNI error: a CniError as it is, anything else as code 102 naming it. */
export function asCniError(error: unknown): CniError {
  if (error instanceof CniError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new CniError(CniCode.internal, `the bridge failed: ${message}`, "", { cause: error });
}

/** The answer on the wire: the exit code in decimal, a newline, the body. */
export function encodeAnswer(answer: CniAnswer): Buffer {
  return Buffer.from(`${answer.exitCode}\n${answer.body}`, "utf8");
}
