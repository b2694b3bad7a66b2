/** A bad command-line flag or environment variable of `multus-ipmgr sim`. The message names value and fix. */
export class UsageError extends Error {
  override name = "UsageError";
  /** The flag, e.g. `--ec2-port`. */
  readonly flag: string;

  constructor(flag: string, message: string) {
    super(message);
    this.flag = flag;
  }
}
