import { nitroOf, xenInstanceTypes } from "./instance-limits.js";

/**
 * Nitro is a property of the instance type: DescribeInstanceTypes answers it per type, and EC2 delegates prefixes
 * to the ENIs of every instance of a Nitro type and of none other. A world instance's `nitro` key only states it
 * for a type the simulator's table does not know; a world where it contradicts the type (the table's word, or
 * another instance of the same type) is refused, so that doctor and the simulator never disagree.
 */

/** The fields of a world instance this module reads. */
export interface NitroDeclaration {
  readonly id: string;
  readonly instanceType: string;
  readonly nitro?: boolean | undefined;
}

/**
 * Whether instances of `instanceType` are built on the Nitro System: the simulator's table, else the first
 * instance of that type that says so in the world, else true (most current types are).
 */
export function typeIsNitro(instances: readonly NitroDeclaration[], instanceType: string): boolean {
  return (
    nitroOf(instanceType) ??
    instances.find((i) => i.instanceType === instanceType && i.nitro !== undefined)?.nitro ??
    true
  );
}

/** Reports each instance whose `nitro` contradicts its type, at `instances[i].nitro`. */
export function checkNitroPerType(
  instances: readonly NitroDeclaration[],
  problem: (path: (string | number)[], message: string) => void,
): void {
  instances.forEach((instance, i) => {
    if (instance.nitro === undefined) return;
    const path = ["instances", i, "nitro"];
    const said = `instance ${instance.id} says nitro: ${instance.nitro}`;
    const known = nitroOf(instance.instanceType);
    if (known !== undefined && known !== instance.nitro) {
      const fix = known
        ? `remove nitro, or use a type that is not Nitro (${xenInstanceTypes.join(", ")})`
        : "remove nitro, or use a Nitro type (m5.large, c5.xlarge, ...)";
      problem(
        path,
        `${said}, but ${instance.instanceType} is ${known ? "" : "not "}built on the Nitro System, and EC2 answers that per instance type (DescribeInstanceTypes): ${fix}`,
      );
      return;
    }
    const first = instances.find((o) => o.instanceType === instance.instanceType && o.nitro !== undefined);
    if (known === undefined && first !== undefined && first.nitro !== instance.nitro) {
      problem(
        path,
        `${said}, but instance ${first.id} of the same type ${instance.instanceType} says nitro: ${first.nitro}, and EC2 answers that per instance type (DescribeInstanceTypes): give every instance of ${instance.instanceType} the same nitro`,
      );
    }
  });
}
