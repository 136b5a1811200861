import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["apps/*/test/**/*.test.ts", "packages/*/test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Suites start real servers on ports 0; two workers fit the 2-core machines.
    maxWorkers: 2,
  },
});
