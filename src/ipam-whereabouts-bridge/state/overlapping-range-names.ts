/**
 * The names of whereabouts' OverlappingRangeIPReservation objects, and which address a name stands for. Pure.
 *
 * whereabouts (`pkg/storage/kubernetes`, NormalizeIP) names the reservation of an address after the address
 * as Go prints it (IPv6 compressed, lowercase), with every `:` written `-` and a `0` added when the text
 * ends with `:` ("2001:db8::" is "2001-db8--0"), and, when the NAD sets `network_name`, prefixed with
 * `<network_name>-`. A name can therefore be read several ways when the network name is made of hex
 * letters and the address is IPv6: "cafe-2001-db8-100-2--101" is cafe:2001:db8:100:2::101 in the unnamed
 * network, or 2001:db8:100:2::101 in the network "cafe". The ranges decide: a reading counts when a NAD of
 * that network has a range whose block holds the address.
 */
import { cidrContains, family, tryCanonical } from "../../eni/ip.js";
import type { WhereaboutsRange } from "./whereabouts-ranges.js";

/** One way to read a reservation's name. */
export interface ReservationReading {
  /** "" for whereabouts' unnamed network. */
  readonly networkName: string;
  /** Canonical. */
  readonly address: string;
}

/** The name whereabouts gives the reservation of `address` (canonical) in the network `networkName`. */
export function reservationName(address: string, networkName: string): string {
  const text = family(address) === 6 && address.endsWith(":") ? `${address}0` : address;
  const normalized = text.replaceAll(":", "-");
  return networkName === "" ? normalized : `${networkName}-${normalized}`;
}

function addressOfNormalized(text: string): string | undefined {
  if (text.includes(".")) return tryCanonical(text);
  if (!text.includes("-")) return undefined;
  return tryCanonical(text.replaceAll("-", ":"));
}

/** Every (network, address) pair that whereabouts would have given exactly this name. */
export function readingsOfReservationName(name: string): ReservationReading[] {
  const readings: ReservationReading[] = [];
  const consider = (networkName: string, rest: string): void => {
    const address = addressOfNormalized(rest);
    if (address !== undefined && reservationName(address, networkName) === name) {
      readings.push({ networkName, address });
    }
  };
  consider("", name);
  for (let i = name.indexOf("-"); i > 0; i = name.indexOf("-", i + 1)) {
    consider(name.slice(0, i), name.slice(i + 1));
  }
  return readings;
}

/**
 * The (network, address) pairs a reservation stands for: the readings that a NAD's range of that network
 * holds; when none does (the NAD is gone, or cannot be read), every reading, so that an address whereabouts
 * still reserves is never taken for free.
 */
export function readingsOfReservation(
  name: string,
  ranges: readonly WhereaboutsRange[],
): ReservationReading[] {
  const readings = readingsOfReservationName(name);
  const held = readings.filter((r) =>
    ranges.some(
      (range) =>
        range.networkName === r.networkName &&
        range.family === family(r.address) &&
        cidrContains(range.cidr, r.address),
    ),
  );
  return held.length > 0 ? held : readings;
}

/** The addresses a reservation stands for (`readingsOfReservation`), each once. */
export function addressesOfReservation(name: string, ranges: readonly WhereaboutsRange[]): string[] {
  return [...new Set(readingsOfReservation(name, ranges).map((r) => r.address))];
}
