/**
 * The request of the chained CNI plugin on the bridge's socket, one per connection (docs/cni-plugin.md):
 *
 *   MULTUS-IPMGR-CNI 1\n
 *   CNI_COMMAND=ADD\n  CNI_CONTAINERID=...\n  CNI_NETNS=...\n  CNI_IFNAME=...\n  CNI_ARGS=...\n  CNI_PATH=...\n
 *   \n
 *   the plugin's stdin, byte for byte, until the plugin shuts down its write side
 *
 * Every env line is present, in this order, with an empty value when the variable is unset. Pure.
 */
import { CniCode } from "./cni-result.js";
import { CniError } from "./errors/cni-error.js";

export const CNI_REQUEST_HEADER = "MULTUS-IPMGR-CNI 1";

export const CNI_ENV_NAMES = [
  "CNI_COMMAND",
  "CNI_CONTAINERID",
  "CNI_NETNS",
  "CNI_IFNAME",
  "CNI_ARGS",
  "CNI_PATH",
] as const;

export const CNI_COMMANDS = ["ADD", "DEL", "CHECK"] as const;
export type CniCommand = (typeof CNI_COMMANDS)[number];

export interface CniRequest {
  readonly command: CniCommand;
  readonly containerId: string;
  readonly netns: string;
  readonly ifname: string;
  /** CNI_ARGS, unparsed (cni-netconf.ts parses it). */
  readonly args: string;
  readonly path: string;
  /** The plugin's stdin, the netconf JSON. */
  readonly stdin: string;
}

/** The bytes of `request` on the wire. */
export function frameCniRequest(request: CniRequest): Buffer {
  const env = [
    request.command,
    request.containerId,
    request.netns,
    request.ifname,
    request.args,
    request.path,
  ].map((value, i) => `${CNI_ENV_NAMES[i]}=${value}\n`);
  return Buffer.from(`${CNI_REQUEST_HEADER}\n${env.join("")}\n${request.stdin}`, "utf8");
}

/** Whether the header (up to the blank line) has arrived: the server reads the body until end of stream. */
export function headerComplete(bytes: Buffer): boolean {
  return bytes.includes("\n\n");
}

/** Parses a whole request; throws a CniError (6: not framed as above, 4: a CNI_ variable wrong). */
export function parseCniRequest(bytes: Buffer): CniRequest {
  const text = bytes.toString("utf8");
  const end = text.indexOf("\n\n");
  if (end < 0) throw decodeError("it has no blank line after its header");
  const [header, ...lines] = text.slice(0, end).split("\n");
  if (header !== CNI_REQUEST_HEADER) {
    throw decodeError(
      `its first line is ${JSON.stringify(header)}, not ${JSON.stringify(CNI_REQUEST_HEADER)}`,
    );
  }
  if (lines.length !== CNI_ENV_NAMES.length) {
    throw decodeError(`it has ${lines.length} variable lines, where ${CNI_ENV_NAMES.length} are expected`);
  }
  const values = lines.map((line, i) => {
    const name = CNI_ENV_NAMES[i] as string;
    if (!line.startsWith(`${name}=`)) {
      throw decodeError(`variable line ${i + 1} is ${JSON.stringify(line)}, where ${name}=... is expected`);
    }
    return line.slice(name.length + 1);
  });
  const [command = "", containerId = "", netns = "", ifname = "", args = "", path = ""] = values;
  if (!(CNI_COMMANDS as readonly string[]).includes(command)) {
    throw new CniError(
      CniCode.invalidEnvironment,
      `CNI_COMMAND is ${JSON.stringify(command)}, which the bridge does not answer`,
      `it answers ${CNI_COMMANDS.join(", ")}; the plugin answers VERSION itself`,
    );
  }
  return {
    command: command as CniCommand,
    containerId,
    netns,
    ifname,
    args,
    path,
    stdin: text.slice(end + 2),
  };
}

function decodeError(what: string): CniError {
  return new CniError(
    CniCode.decode,
    `the bridge cannot decode the plugin's request: ${what}`,
    "the multus-ipmgr plugin in /opt/cni/bin and the bridge must be of the same release: reinstall the plugin",
  );
}
