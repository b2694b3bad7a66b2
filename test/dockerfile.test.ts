/**
 * The Dockerfile and its build context, read as text. `npm run test:image` builds and runs the image for
 * real (test/image/image.e2e.ts); these checks keep the properties that build cannot show on one machine.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const dockerfile = readFileSync("Dockerfile", "utf8");
/** Instructions, without comments, continuation lines joined. */
const instructions = dockerfile
  .replace(/\\\n/g, " ")
  .split("\n")
  .filter((line) => line.trim() !== "" && !line.trimStart().startsWith("#"));
const runtimeStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
/** The base every stage starts from: the Dockerfile's ARG, expanded by the builder, not by JavaScript. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's own ${...}
const BASE = "${NODE_IMAGE}";

describe("the image", () => {
  it("carries iproute2, which the sidecar's address events need", () => {
    expect(dockerfile).toMatch(/apt-get install .*iproute2/);
  });

  it("ships the simulator's bundle beside the CLI's (dist/ is copied whole, through the code-cache stage)", () => {
    expect(dockerfile).toContain("COPY --from=build /src/dist /app/dist");
    expect(runtimeStage).toContain("COPY --from=code-cache /app/dist ./dist");
  });

  it("makes V8's code cache with the runtime stage's own node: the same base, on the target platform", () => {
    expect(dockerfile).toContain("rm dist/cli.cjs.cache dist/bridge.cjs.cache");
    const stage = dockerfile.slice(dockerfile.indexOf(`\nFROM ${BASE} AS code-cache\n`));
    expect(stage).toMatch(/^\nFROM \$\{NODE_IMAGE\} AS code-cache\n/);
    expect(stage).toContain("RUN node /app/dist/write-code-cache.cjs");
    expect(runtimeStage).toContain('ENTRYPOINT ["node", "/app/dist/multus-ipmgr.cjs"]');
  });

  it("ships no source maps: the build stage deletes them before the runtime stage copies dist/", () => {
    expect(dockerfile).toMatch(/RUN npm run build && find dist -name '\*\.map' -delete && /);
  });

  it("is architecture-neutral: no instruction names an architecture, and the build stage runs on the builder's platform", () => {
    for (const line of instructions) expect(line).not.toMatch(/amd64|x86_64|x64|arm64|aarch64|armhf/);
    expect(instructions[1]).toBe(`FROM --platform=$BUILDPLATFORM ${BASE} AS build`);
    expect(runtimeStage).toMatch(/^\nFROM \$\{NODE_IMAGE\}\n/);
  });

  it("starts every stage from one base, pinned by digest: node:24-bookworm-slim, a supported LTS line", () => {
    expect(instructions[0]).toMatch(/^ARG NODE_IMAGE=node:(\d+)-bookworm-slim@sha256:[0-9a-f]{64}$/);
    const major = Number(/^ARG NODE_IMAGE=node:(\d+)-/.exec(instructions[0] ?? "")?.[1]);
    // Node 20 reached its end of life in April 2026; 22 (to April 2027) and 24 (to April 2028) are LTS lines.
    expect([22, 24]).toContain(major);
    const froms = instructions.filter((line) => line.startsWith("FROM "));
    expect(froms).toHaveLength(4);
    for (const line of froms)
      expect(line).toMatch(/^FROM (--platform=\$BUILDPLATFORM )?\$\{NODE_IMAGE\}( AS [a-z-]+)?$/);
  });

  it("installs the dependencies with npm ci (exactly the lockfile), never npm install", () => {
    expect(instructions.some((line) => /\bnpm ci --no-audit --no-fund\b/.test(line))).toBe(true);
    expect(instructions.filter((line) => /\bnpm (install|i)\b/.test(line))).toEqual([]);
  });

  it("runs on what package.json's engines promise: the image's Node major is inside it, and so is Node 20", () => {
    const { engines } = JSON.parse(readFileSync("package.json", "utf8")) as { engines: { node: string } };
    expect(engines.node).toBe(">=20");
    const image = readFileSync("docs/image.md", "utf8");
    expect(image).toContain("`engines`");
    expect(image).toContain(">=20");
  });

  it("carries the OCI labels, its version by default package.json's", () => {
    const { version, license } = JSON.parse(readFileSync("package.json", "utf8")) as {
      version: string;
      license: string;
    };
    expect(runtimeStage).toContain(`ARG VERSION=${version}\n`);
    expect(runtimeStage).toContain(`org.opencontainers.image.licenses="${license}"`);
    expect(runtimeStage).toMatch(/org\.opencontainers\.image\.version="\$\{VERSION\}"/);
    expect(runtimeStage).toMatch(/org\.opencontainers\.image\.source="\$\{SOURCE_URL\}"/);
    expect(runtimeStage).toContain('org.opencontainers.image.title="multus-ipmgr"');
    expect(runtimeStage).toContain("org.opencontainers.image.description=");
  });

  it("puts multus-ipmgr on the PATH, for kubectl exec and kubectl debug", () => {
    expect(dockerfile).toContain("chmod 0755 dist/multus-ipmgr.mjs dist/multus-ipmgr.cjs");
    expect(runtimeStage).toContain("ln -s /app/dist/multus-ipmgr.cjs /usr/local/bin/multus-ipmgr");
  });

  it("compiles the CNI plugin on the target platform with Debian's gcc, and ships the binary and its installer, not the compiler", () => {
    const stage = dockerfile.slice(dockerfile.indexOf(`\nFROM ${BASE} AS cni-plugin\n`));
    expect(stage).toMatch(/^\nFROM \$\{NODE_IMAGE\} AS cni-plugin\n/);
    expect(stage).toMatch(/apt-get install -y --no-install-recommends gcc libc6-dev/);
    expect(stage).toContain("RUN node scripts/build-cni-plugin.mjs");
    expect(runtimeStage).toContain("COPY --from=cni-plugin /src/dist/cni/multus-ipmgr ./cni/multus-ipmgr");
    expect(runtimeStage).toContain("COPY native/cni-plugin/install.sh ./cni/install.sh");
    expect(runtimeStage).not.toMatch(/\bgcc\b/);
  });

  it("runs as a numeric non-root user", () => {
    expect(runtimeStage).toMatch(/\nUSER 1000:1000\n/);
  });
});

describe("the build context (.dockerignore)", () => {
  const rules = readFileSync(".dockerignore", "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  const included = rules.filter((rule) => rule.startsWith("!")).map((rule) => rule.slice(1));

  it("leaves everything out but what the Dockerfile copies", () => {
    expect(rules[0]).toBe("*");
    const sources = instructions
      .filter((line) => line.startsWith("COPY ") && !line.includes("--from="))
      .flatMap((line) => line.split(/\s+/).slice(1, -1));
    const covered = (source: string) =>
      included.some((rule) => source === rule.replace(/\/$/, "") || source.startsWith(rule));
    expect(sources.filter((source) => !covered(source))).toEqual([]);
    expect(
      included.filter((rule) => !sources.some((source) => source.startsWith(rule.replace(/\/$/, "")))),
    ).toEqual([]);
  });

  it("never takes node_modules, dist, .git, .bench or tests into the context", () => {
    for (const path of ["node_modules", "dist", ".git", ".bench", "test", "bench", ".ci"]) {
      expect(included.some((rule) => rule === path || rule.startsWith(`${path}/`))).toBe(false);
    }
  });
});
