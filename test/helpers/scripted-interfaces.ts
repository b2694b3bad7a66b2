import type { InterfaceSource } from "../../src/eni/interface-source.js";
import type { PodInterface } from "../../src/eni/types.js";

/** An InterfaceSource whose snapshot the test sets: the pod's interfaces without a network namespace. */
export class ScriptedInterfaces implements InterfaceSource {
  current: PodInterface[];

  constructor(initial: PodInterface[] = []) {
    this.current = initial;
  }

  async read(): Promise<PodInterface[]> {
    return this.current.map((i) => ({ ...i, addresses: [...i.addresses] }));
  }
}
