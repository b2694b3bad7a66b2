import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

describe("the image", () => {
  it("carries iproute2, which the sidecar's address events need", () => {
    expect(readFileSync("Dockerfile", "utf8")).toMatch(/apt-get install .*iproute2/);
  });

  it("ships the simulator's bundle beside the CLI's (dist/ is copied whole)", () => {
    expect(readFileSync("Dockerfile", "utf8")).toContain("COPY --from=build /src/dist ./dist");
  });
});
