import { type CheckResult, ok, problem, skipped, warn } from "../check.js";
import type { IpCommandResult } from "../ip-command-probe.js";

export type AddressEventsMode = "auto" | "ip-monitor" | "poll";

/** Whether the sidecar can watch address events with `ip -o monitor address`, as IPMGR_ADDRESS_EVENTS asks. */
export function ipCommandCheck(
  result: IpCommandResult | undefined,
  mode: AddressEventsMode,
  source: string,
): CheckResult {
  if (source !== "interfaces") {
    return skipped(
      "ip-command",
      `IPMGR_ADDRESS_SOURCE is ${source}: the sidecar does not watch interface events then.`,
    );
  }
  if (mode === "poll" || result === undefined) {
    return skipped(
      "ip-command",
      "IPMGR_ADDRESS_EVENTS is poll: the sidecar polls the interfaces and never runs ip.",
    );
  }
  if (result.ok) {
    return ok(
      "ip-command",
      `"${result.command}" runs (iproute2 is here): the sidecar sees address changes as kernel events.`,
    );
  }
  const detail = `cannot run "${result.command}" (${result.reason})`;
  if (mode === "ip-monitor") {
    return problem(
      "ip-command",
      `${detail}, and IPMGR_ADDRESS_EVENTS is ip-monitor: the sidecar exits 2 at start.`,
      {
        fix: "install iproute2 in the image (the project's image has it), or set IPMGR_ADDRESS_EVENTS=auto",
      },
    );
  }
  return warn(
    "ip-command",
    `${detail}: the sidecar falls back to polling the interfaces every IPMGR_POLL_INTERVAL_MS (50 ms), 1 to 2 % of a core instead of 0.4 % when idle.`,
    { fix: "install iproute2 in the image (the project's image has it); init does not need it" },
  );
}
