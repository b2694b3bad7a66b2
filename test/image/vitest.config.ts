import { defineConfig } from "vitest/config";

/**
 * `npm run test:image` only (scripts/test-image.sh builds the image first and names it in IPMGR_IMAGE): the
 * image tests are not part of `npm test`. No results cache: the script runs as root, and a cache file
 * written by root in node_modules/ would stop the checkout's owner from running the tests afterwards.
 */
export default defineConfig({
  test: {
    include: ["test/image/**/*.e2e.ts"],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    fileParallelism: false,
    cache: false,
    globalSetup: ["test/helpers/global-setup.ts"],
  },
});
