import { ImdsError } from "../../eni/errors/imds-error.js";
import type { Imds } from "../../eni/imds.js";
import type { EniSlot } from "./link-pass.js";

/** What the agent reads of IMDS: the MACs, each one's device number, and the raw getter for network-card. */
export type SlotImds = Pick<Imds, "macs" | "deviceNumber"> & {
  get(path: string): Promise<string | undefined>;
};

/**
 * The ENIs IMDS shows, each with its (card, device) slot: macs/<mac>/device-number and network-card. IMDS
 * answers 404 for network-card on instance types with one card, hence 0. An ENI detached between the list and
 * its items (404) is left out: the next pass sees the list without it.
 */
export async function readEniSlots(imds: SlotImds): Promise<EniSlot[]> {
  const macs = await imds.macs();
  const slots = await Promise.all(
    macs.map(async (mac): Promise<EniSlot | undefined> => {
      try {
        const [deviceIndex, card] = await Promise.all([
          imds.deviceNumber(mac),
          imds.get(`/latest/meta-data/network/interfaces/macs/${mac}/network-card`),
        ]);
        const networkCardIndex = card === undefined ? 0 : Number(card.trim());
        if (!Number.isInteger(networkCardIndex) || networkCardIndex < 0) {
          throw new ImdsError(
            `/latest/meta-data/network/interfaces/macs/${mac}/network-card`,
            200,
            `IMDS returned ${JSON.stringify(card)} for the network card of ${mac}, which is not a card index.`,
          );
        }
        return { mac, deviceIndex, networkCardIndex };
      } catch (error) {
        if (error instanceof ImdsError && error.status === 404) return undefined;
        throw error;
      }
    }),
  );
  return slots.filter((s): s is EniSlot => s !== undefined);
}
