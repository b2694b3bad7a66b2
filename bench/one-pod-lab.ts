import { Lab } from "../test/helpers/netns.js";
import { MAC, NODE1, twoNodeWorld } from "../test/helpers/worlds.js";

/**
 * The lab of the `init` benches: one pod ("pod", net1 on node 1's first Multus ENI, no address yet) in
 * twoNodeWorld, its node given room for 64 IPv4 addresses per ENI, so that each fresh start can take a new one.
 */
export function startOnePodLab(): Promise<Lab> {
  const world = twoNodeWorld();
  (world.instances as Array<Record<string, unknown>>)[0] = {
    ...((world.instances as Array<Record<string, unknown>>)[0] ?? {}),
    instanceType: undefined,
    ipv4AddressesPerEni: 64,
  };
  return Lab.start(world, [
    { name: "pod", instanceId: NODE1, interfaces: [{ name: "net1", mac: MAC.node1A1, addresses: [] }] },
  ]);
}
