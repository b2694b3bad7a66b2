/**
 * The chained plugin's side of the bridge's socket, as the host binary speaks it (docs/cni-plugin.md): one
 * connection, the framed request, the write side shut, then the answer read to the end. A netconf and a
 * prevResult of ipvlan's shape for the tests.
 */
import { createConnection } from "node:net";
import { type CniRequest, frameCniRequest } from "../../src/ipam-whereabouts-bridge/cni/cni-request.js";

export interface CniReply {
  /** Undefined: the bridge closed the connection before an answer (the binary answers code 11 then). */
  readonly exitCode: number | undefined;
  readonly body: string;
}

/** Sends `bytes` (default: the framed request) and reads the answer until the bridge closes. */
export function callCni(socketPath: string, request: CniRequest | Buffer): Promise<CniReply> {
  const bytes = Buffer.isBuffer(request) ? request : frameCniRequest(request);
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const newline = text.indexOf("\n");
      if (newline < 0) resolve({ exitCode: undefined, body: text });
      else resolve({ exitCode: Number(text.slice(0, newline)), body: text.slice(newline + 1) });
    });
    socket.end(bytes);
  });
}

/** An ipvlan result: `net1` in the sandbox with `mac`, and `addresses` on it (1.0.0 shape; `version` for 0.4.0). */
export function ipvlanResult(
  mac: string,
  addresses: readonly string[],
  cniVersion = "1.0.0",
): Record<string, unknown> {
  const old = cniVersion !== "1.0.0";
  return {
    cniVersion,
    interfaces: [{ name: "net1", mac, sandbox: "/var/run/netns/cni-test" }],
    ips: addresses.map((a) => ({
      ...(old ? { version: a.includes(":") ? "6" : "4" } : {}),
      address: a.includes(":") ? `${a}/64` : `${a}/25`,
      interface: 0,
    })),
    dns: {},
  };
}

/** A request of `command` for pod cnf/`pod` (container `c-<pod>`), chained after ipvlan with `prevResult`. */
export function cniRequest(
  command: "ADD" | "DEL" | "CHECK",
  pod: string,
  prevResult: unknown,
  conf: Record<string, unknown> = {},
): CniRequest {
  const netconf = {
    cniVersion: "1.0.0",
    name: "multus-ipvlan",
    type: "multus-ipmgr",
    ipam: { type: "whereabouts", range: "198.51.100.192/27" },
    ...(prevResult === undefined ? {} : { prevResult }),
    ...conf,
  };
  return {
    command,
    containerId: `c-${pod}`,
    netns: "/var/run/netns/cni-test",
    ifname: "net1",
    args: `IgnoreUnknown=true;K8S_POD_NAMESPACE=cnf;K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=c-${pod};K8S_POD_UID=uid-${pod}`,
    path: "/opt/cni/bin",
    stdin: JSON.stringify(netconf),
  };
}
