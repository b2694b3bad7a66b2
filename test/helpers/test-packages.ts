/**
 * Debian packages some tests need, installed by the tests' global setup when it runs as root on Debian or
 * Ubuntu (CI, a container, `sudo npm test`), so that the README's `npm install && npm test` does all the
 * set-up: gcc and libc6-dev build the CNI plugin's static host binary (dist/cni/multus-ipmgr), and
 * containernetworking-plugins brings the reference plugins the chain tests run (/usr/lib/cni). As a normal
 * user nothing is installed, and the tests that need them skip and say why.
 */
import { type ExecFileSyncOptions, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

interface TestPackage {
  readonly name: string;
  /** A file the package installs: present, the package is there. */
  readonly file: string;
  readonly why: string;
}

export const TEST_PACKAGES: readonly TestPackage[] = [
  { name: "gcc", file: "/usr/bin/gcc", why: "to build the CNI plugin's host binary" },
  { name: "libc6-dev", file: "/usr/include/stdio.h", why: "to build the CNI plugin's host binary" },
  {
    name: "containernetworking-plugins",
    file: "/usr/lib/cni/macvlan",
    why: "the reference CNI plugins of test/cni-chain.test.ts",
  },
];

/**
 * Installs the missing packages with apt-get, as root only. Returns a note for stderr when some are
 * missing and cannot be installed here (not root, no apt-get, apt-get failed), else undefined.
 */
export function installTestPackages(): string | undefined {
  const missing = TEST_PACKAGES.filter((p) => !existsSync(p.file));
  if (missing.length === 0) return undefined;
  const names = missing.map((p) => p.name).join(" ");
  const list = missing.map((p) => `${p.name} (${p.why})`).join(", ");
  if (process.getuid?.() !== 0 || !existsSync("/usr/bin/apt-get")) {
    return `missing ${list}; as root on Debian or Ubuntu the tests install them (apt-get install ${names})`;
  }
  try {
    const quiet: ExecFileSyncOptions = {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    };
    execFileSync("apt-get", ["update", "-qq"], quiet);
    execFileSync(
      "apt-get",
      ["install", "-y", "-qq", "--no-install-recommends", ...missing.map((p) => p.name)],
      quiet,
    );
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim() ?? String(error);
    return `apt-get install ${names} failed (${stderr}); the tests that need ${list} are skipped`;
  }
  return undefined;
}
