/**
 * deploy/'s static manifests are the chart's (npm run manifests, scripts/manifests.mjs): this fails while a
 * file differs from what the chart renders, naming it.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { renderDeploy } from "../scripts/manifests.mjs";
import { helmUnavailableReason } from "./helpers/helm.js";

const ROOT = resolve(import.meta.dirname, "..");
const unavailable = helmUnavailableReason();
if (unavailable !== undefined)
  process.stderr.write(`note: ${unavailable}; test/chart-manifests.test.ts is skipped\n`);

describe.skipIf(unavailable !== undefined)("deploy/ rendered from the chart", () => {
  it("every generated file is as the chart renders it (else: npm run manifests)", () => {
    const stale = [...renderDeploy()]
      .filter(([file, content]) => readFileSync(join(ROOT, "deploy", file), "utf8") !== content)
      .map(([file]) => `deploy/${file}`);
    expect(stale).toEqual([]);
  });
});
