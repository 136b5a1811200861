import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["apps/*/test/**/*.test.ts", "packages/*/test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Suites start real servers on ports 0; two workers fit the 2-core machines.
    maxWorkers: 2,
    // .ci/run asks for a JSON report to print a plain "N passed, N failed" line.
    ...(process.env.LOOM_TEST_REPORT
      ? { reporters: ["default", "json"], outputFile: { json: process.env.LOOM_TEST_REPORT } }
      : {}),
  },
});
