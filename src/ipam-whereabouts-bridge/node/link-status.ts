/**
 * The links agent's report, a JSON file on a volume the two containers share (IPMGR_BRIDGE_LINK_STATUS_FILE):
 * the agent, which holds NET_ADMIN, writes it whole (a temp file renamed over it) after each pass; the bridge,
 * unprivileged, reads it to decide the startup taint. This module is the one definition of its shape.
 */
import * as z from "zod/mini";

export const LINK_STATUS_VERSION = 1;

/**
 * `ready`: the link has the network's name, MTU, is up, carries no address and rp_filter is 0.
 * `waiting`: the ENI is not in IMDS yet, or its link has not appeared in /sys/class/net.
 * `failed`: a step failed (`detail` says which and why); retried on the next pass.
 */
export const LINK_STATES = ["ready", "waiting", "failed"] as const;
export type LinkState = (typeof LINK_STATES)[number];

const linkSchema = z.strictObject({
  /** The network's `name` (IPMGR_BRIDGE_ATTACH_NETWORKS). */
  network: z.string(),
  deviceIndex: z.number(),
  networkCardIndex: z.number(),
  /** The ENI's MAC, lower case; absent while IMDS does not show the ENI. */
  mac: z.optional(z.string()),
  state: z.enum(LINK_STATES),
  /** One sentence: what is awaited or what failed, and the fix where one is known. */
  detail: z.string(),
});

const statusSchema = z.strictObject({
  version: z.literal(LINK_STATUS_VERSION),
  /** ISO 8601. A report older than three of the agent's intervals is stale: the bridge treats it as absent. */
  writtenAt: z.string(),
  links: z.array(linkSchema),
});

export type LinkReport = z.infer<typeof linkSchema>;
export type LinkStatus = z.infer<typeof statusSchema>;

export function serializeLinkStatus(status: LinkStatus): string {
  return `${JSON.stringify(status)}\n`;
}

/** The report, or a sentence saying why the text is not one (the bridge logs it and waits). */
export function parseLinkStatus(text: string): LinkStatus | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return `not JSON: ${(error as Error).message}`;
  }
  const parsed = statusSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `not a link status (version ${LINK_STATUS_VERSION}): ${issue?.path.join(".") || "the document"}: ${issue?.message ?? "invalid"}`;
  }
  return parsed.data;
}
