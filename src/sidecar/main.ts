// Placeholder until the sidecar command lands; replaced by its real entrypoint.
export async function main(_argv: readonly string[]): Promise<number> {
  process.stderr.write("multus-ipmgr sidecar: not built yet\n");
  return 1;
}
