import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Two workers on CI's two cores: the suite is mostly waiting (simulators, namespaces, timers), and one
    // worker, vitest's default there, made it the sum of its files (about 9 minutes, the long pole 2.3).
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ["test/helpers/global-setup.ts"],
  },
});
