/**
 * What both doctor profiles (the pod's and the node's) read of the instance once IMDS answers: its identity
 * document and every ENI in full. A read that fails is a problem of its check (`instance`, `enis`); a read
 * that cannot be made is `skipped`, naming the check to fix first.
 */
import { readInstanceEnis } from "../eni/eni-discovery.js";
import { IpmgrError } from "../eni/errors/ipmgr-error.js";
import type { Imds } from "../eni/imds.js";
import type { EniState } from "../eni/types.js";
import { type CheckResult, errorSentence, skipped } from "./check.js";
import { instanceCheck } from "./checks/imds.js";
import { IDENTITY_DOCUMENT_PATH, type InstanceIdentity, parseIdentityDocument } from "./identity.js";
import { attempt, blocked, SEE_IMDS } from "./read-permissions.js";

/** IMDS's raw getter: an absolute path's text, undefined on 404. */
interface ImdsGetter {
  get(path: string): Promise<string | undefined>;
}

export interface InstanceRead {
  /** Why nothing of IMDS could be read (no token); undefined when it answered. */
  readonly noImds: string | undefined;
  readonly identity: InstanceIdentity | undefined;
  /** Every ENI of the instance, in full; undefined when they could not be read. */
  readonly enis: EniState[] | undefined;
  /** Why checks that need the ENIs cannot run; undefined when they were read. */
  readonly noEnis: string | undefined;
}

/** The instance's identity document, parsed. */
export async function readIdentity(deps: { readonly imds: ImdsGetter }): Promise<InstanceIdentity> {
  const text = await deps.imds.get(IDENTITY_DOCUMENT_PATH);
  if (text === undefined) throw new IpmgrError(`IMDS has no ${IDENTITY_DOCUMENT_PATH} (HTTP 404).`);
  try {
    return parseIdentityDocument(text);
  } catch (error) {
    throw new IpmgrError(errorSentence(error), { cause: error });
  }
}

/**
 * The `instance` and `enis` reads, when IMDS issued a token (`imdsOk`). Every ENI in full, with every MAC
 * (readInstanceEnis, not init's readEnis: the same reads, and no code of doctor's on init's path).
 */
export async function readInstance(
  imds: Imds & ImdsGetter,
  imdsOk: boolean,
  region: string | undefined,
  add: (...r: CheckResult[]) => void,
): Promise<InstanceRead> {
  const noImds = imdsOk ? undefined : SEE_IMDS;
  const identity =
    noImds === undefined ? await attempt("instance", add, () => readIdentity({ imds })) : undefined;
  if (identity !== undefined) add(instanceCheck(identity, region));
  else if (noImds !== undefined) add(skipped("instance", noImds));
  const enis =
    noImds === undefined
      ? await attempt("enis", add, async () => readInstanceEnis(imds, await imds.macs()))
      : undefined;
  const noEnis = blocked(
    noImds,
    enis === undefined ? "not checked: the ENIs could not be read (see enis)." : undefined,
  );
  return { noImds, identity, enis, noEnis };
}
