import type { ExitCodeValue } from "../errors/exit-codes.js";
import { podSettings } from "./config.js";
import type { Logger } from "./logger.js";
import { reportFailure } from "./report-failure.js";
import { type ShutdownSignals, type SignalSource, shutdownSignals } from "./shutdown-signals.js";

/**
 * `--help` or `-h` anywhere in `argv`: writes the command's help (built only now) and returns true, and the
 * command exits 0 without reading its configuration, so that a broken setting never hides the help.
 */
export function printHelpIfAsked(
  argv: readonly string[],
  help: () => string,
  write: (text: string) => unknown = (text) => process.stdout.write(text),
): boolean {
  if (!argv.includes("--help") && !argv.includes("-h")) return false;
  write(help());
  return true;
}

/**
 * What init, the sidecar and the bridge keep from their first line to their last: the logger and the
 * termination log through which a failure is reported. Both are known only once the configuration has
 * loaded; a failure before that (the configuration itself) goes to IPMGR_TERMINATION_LOG as the environment
 * has it, through reportFailure's default logger.
 */
export class CommandRun {
  readonly command: string;
  /** The command's logger, set once the configuration has made it. */
  logger: Logger | undefined;
  /** Where reportFailure writes its sentence; set to the configuration's value once it has loaded. */
  terminationLog: string | undefined;

  constructor(command: string, env: NodeJS.ProcessEnv = process.env) {
    this.command = command;
    const setting = podSettings.terminationLog;
    this.terminationLog = env[setting.env] ?? setting.default;
  }

  /** Reports `error` (stderr, the log, the termination log) and returns the exit code of its class. */
  fail(error: unknown): ExitCodeValue {
    return reportFailure(this.command, error, this.logger, this.terminationLog);
  }

  /**
   * SIGTERM and SIGINT for a long-running command: the first resolves `first` (the command drains), a second
   * is logged and exits at once with 143 or 130. `exit` and `source` are for tests.
   */
  shutdownSignals(
    exit: (code: number) => void = (code) => process.exit(code),
    source: SignalSource = process,
  ): ShutdownSignals {
    return shutdownSignals((signal, exitCode) => {
      this.logger?.warn({ signal, exitCode }, "second signal: exiting at once");
      exit(exitCode);
    }, source);
  }
}
