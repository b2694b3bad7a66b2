import type { PodInterface } from "./types.js";

/** Reads the pod's managed interfaces and their addresses. */
export interface InterfaceSource {
  /**
   * A snapshot of the managed interfaces: name, MAC and canonical addresses (no prefix length).
   * Interfaces without any address are omitted.
   */
  read(): Promise<PodInterface[]>;
}
