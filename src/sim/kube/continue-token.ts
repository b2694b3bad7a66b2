import { KubeApiError } from "../errors/kube-api-error.js";

/**
 * The `continue` token of a paged list: the snapshot's resourceVersion and the key to start after, as
 * base64 JSON like kube-apiserver's (clients treat it as opaque). resourceVersion 0 means "the latest":
 * the inconsistent token handed out with a 410 for an expired one.
 */
export function encodeContinue(resourceVersion: number, startAfter: string): string {
  return Buffer.from(
    JSON.stringify({ v: "meta.k8s.io/v1", rv: resourceVersion, start: startAfter }),
  ).toString("base64url");
}

export function decodeContinue(token: string): { resourceVersion: number; startAfter: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as {
      v?: unknown;
      rv?: unknown;
      start?: unknown;
    };
    if (parsed.v === "meta.k8s.io/v1" && Number.isInteger(parsed.rv) && typeof parsed.start === "string") {
      return { resourceVersion: parsed.rv as number, startAfter: parsed.start };
    }
  } catch {
    // Falls through to the 400 below: a token that is not ours.
  }
  throw new KubeApiError(
    400,
    "BadRequest",
    `continue key is not valid: ${JSON.stringify(token)} is not a continue token this server issued`,
  );
}
