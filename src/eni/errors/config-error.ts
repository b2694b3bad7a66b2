import { ExitCode } from "./exit-codes.js";
import { IpmgrError } from "./ipmgr-error.js";

/** A configuration value is missing or invalid. `variable` is the environment variable (or flag) name. */
export class ConfigError extends IpmgrError {
  override name = "ConfigError";
  readonly variable: string;
  readonly value: string | undefined;

  constructor(
    variable: string,
    value: string | undefined,
    problemAndFix: string,
    options?: { cause?: unknown },
  ) {
    super(`${variable}=${value === undefined ? "(unset)" : JSON.stringify(value)}: ${problemAndFix}`, {
      ...options,
      exitCode: ExitCode.config,
    });
    this.variable = variable;
    this.value = value;
  }
}
