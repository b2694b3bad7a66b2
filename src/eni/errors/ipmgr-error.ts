import { ExitCode, type ExitCodeValue } from "./exit-codes.js";

/** Base of every error this tool raises on purpose. The message is a sentence a user can act on. */
export class IpmgrError extends Error {
  override name = "IpmgrError";
  /** The process exit code this error maps to. */
  readonly exitCode: ExitCodeValue;

  constructor(message: string, options?: { cause?: unknown; exitCode?: ExitCodeValue }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.exitCode = options?.exitCode ?? ExitCode.internal;
  }
}
