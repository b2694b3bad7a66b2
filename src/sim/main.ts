// Placeholder until the sim command lands; replaced by its real entrypoint.
export async function main(_argv: readonly string[]): Promise<number> {
  process.stderr.write("multus-ipmgr sim: not built yet\n");
  return 1;
}
