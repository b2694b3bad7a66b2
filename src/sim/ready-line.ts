import type { SimulatorHandle } from "./simulator.js";

/** The single JSON line `multus-ipmgr sim` prints on stdout once every server listens. */
export function readyLine(handle: SimulatorHandle): string {
  return JSON.stringify({
    ready: true,
    ec2: handle.ec2Endpoint,
    control: handle.controlEndpoint,
    imds: handle.imdsEndpoints,
    ...(handle.kubernetesEndpoint === undefined ? {} : { kubernetes: handle.kubernetesEndpoint }),
  });
}
