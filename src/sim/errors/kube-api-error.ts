/** One cause of a 422 Invalid (or other) Status, as the API server lists them in `details.causes`. */
export interface StatusCause {
  /** e.g. `FieldValueRequired`, `FieldValueInvalid`. */
  readonly reason: string;
  readonly message: string;
  /** e.g. `metadata.name`, `spec.containers`. */
  readonly field?: string;
}

/** `details` of a Status: which object, and for 422 the causes. `kind` is the plural resource name for most reasons. */
export interface StatusDetails {
  readonly name?: string;
  readonly group?: string;
  readonly kind?: string;
  readonly uid?: string;
  readonly causes?: readonly StatusCause[];
  readonly retryAfterSeconds?: number;
}

/** A `kind: Status` object, as the API server writes it for errors (and for some successful deletes). */
export interface KubeStatus {
  kind: "Status";
  apiVersion: "v1";
  metadata: { continue?: string; resourceVersion?: string };
  status: "Success" | "Failure";
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/**
 * A Kubernetes API error the simulator answers with: the HTTP status `code`, the machine-readable `reason`
 * (NotFound, AlreadyExists, Conflict, Invalid, Expired, BadRequest, ...) and the message, which follows the
 * API server's wording so that clients that match on it behave as against a real cluster.
 */
export class KubeApiError extends Error {
  override name = "KubeApiError";
  readonly code: number;
  readonly reason: string;
  readonly details: StatusDetails | undefined;
  /** Set on a 410 for an expired `continue` token: the token that continues inconsistently. */
  readonly continueToken: string | undefined;

  constructor(
    code: number,
    reason: string,
    message: string,
    details?: StatusDetails,
    continueToken?: string,
  ) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
    this.continueToken = continueToken;
  }

  toStatus(): KubeStatus {
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: this.continueToken === undefined ? {} : { continue: this.continueToken },
      status: "Failure",
      message: this.message,
      reason: this.reason,
      ...(this.details === undefined ? {} : { details: this.details }),
      code: this.code,
    };
  }
}
