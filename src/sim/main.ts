import { unknownVariableSentence, unknownVariables } from "../eni/process/known-variables.js";
import { checkImdsPorts, checkKubeFlags, listenUsageError, parseSimArgs, simUsage } from "./cli-args.js";
import { UsageError } from "./errors/usage-error.js";
import { WorldError } from "./errors/world-error.js";
import { writeKubeconfig } from "./kube/kubeconfig.js";
import { readyLine } from "./ready-line.js";
import { type SimulatorHandle, startSimulator } from "./simulator.js";
import { loadWorldFile } from "./world.js";

const usageExit = 2;

/** Where the command writes. Stdout gets the ready line (or the help) only; stderr everything else. */
export interface SimOutput {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

const processOutput: SimOutput = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** Resolves on the first SIGTERM or SIGINT. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals): void => {
      process.off("SIGTERM", on);
      process.off("SIGINT", on);
      resolve(signal);
    };
    process.on("SIGTERM", on);
    process.on("SIGINT", on);
  });
}

/**
 * `multus-ipmgr sim`: runs until SIGTERM/SIGINT. Stdout carries exactly one line, the ready line, so that
 * scripts can read the endpoints; everything else goes to stderr.
 */
export async function main(argv: readonly string[], output: SimOutput = processOutput): Promise<number> {
  const fail = (message: string): number => {
    output.stderr(`multus-ipmgr sim: ${message}\n`);
    return usageExit;
  };
  let parsed: ReturnType<typeof parseSimArgs>;
  try {
    parsed = parseSimArgs(argv, process.env);
  } catch (error) {
    if (error instanceof UsageError) return fail(error.message);
    throw error;
  }
  if (parsed.kind === "help") {
    output.stdout(`${simUsage}\n`);
    return 0;
  }
  const { args } = parsed;
  // Stderr, as every line but the ready line.
  for (const unknown of unknownVariables(process.env)) {
    output.stderr(`multus-ipmgr sim: warning: ${unknownVariableSentence(unknown)}\n`);
  }
  let handle: SimulatorHandle;
  try {
    const world = await loadWorldFile(args.world);
    checkImdsPorts(args, world.instances.length);
    checkKubeFlags(args, world.kubernetes !== undefined);
    const log = args.verbose ? (line: string) => output.stderr(`${line}\n`) : undefined;
    handle = await startSimulator(world, {
      host: args.host,
      ec2Port: args.ec2Port,
      controlPort: args.controlPort,
      imdsPortBase: args.imdsPortBase,
      kubePort: args.kubePort,
      ...(log === undefined ? {} : { log }),
      errorLog: (line) => output.stderr(`multus-ipmgr sim: ${line}\n`),
    });
  } catch (error) {
    if (error instanceof WorldError || error instanceof UsageError) return fail(error.message);
    const usage = listenUsageError(error);
    if (usage !== undefined) return fail(usage.message);
    throw error;
  }
  if (args.kubeconfig !== undefined && handle.kubernetesEndpoint !== undefined) {
    try {
      await writeKubeconfig(args.kubeconfig, handle.kubernetesEndpoint);
    } catch (error) {
      await handle.close();
      return fail(
        `cannot write the kubeconfig ${args.kubeconfig} (${(error as Error).message}); pass a writable path with --kubeconfig.`,
      );
    }
  }
  output.stdout(`${readyLine(handle)}\n`);
  const signal = await untilSignal();
  output.stderr(`multus-ipmgr sim: ${signal}, closing\n`);
  await handle.close();
  return 0;
}
