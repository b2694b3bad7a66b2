import { KubeError } from "./kube-error.js";

/** 409: the object exists already (create), or was changed since it was read (update). */
export class KubeConflictError extends KubeError {
  override name = "KubeConflictError";
}
