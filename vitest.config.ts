import { join, relative } from "node:path";
import { defineConfig } from "vitest/config";

const faults = "apps/loom/test/faults/**/*.test.ts";
/** Tests that move a gigabyte through the disk: after the others too, for the same reason as the fault tests. */
const large = "apps/loom/test/large/**/*.test.ts";

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Suites start real servers on ports 0; two workers fit the 2-core machines.
    maxWorkers: 2,
    // .ci/run asks for JSON reports (a directory) to print a plain "N passed, N failed" line: one file per run, as
    // pnpm test runs each package's tests apart, named after the package the run started in.
    ...(process.env.LOOM_TEST_REPORT
      ? {
          reporters: ["default", "json"],
          outputFile: {
            json: join(
              process.env.LOOM_TEST_REPORT,
              `${relative(import.meta.dirname, process.cwd()).replaceAll("/", "-") || "all"}.json`,
            ),
          },
        }
      : {}),
    projects: [
      {
        extends: true,
        test: {
          name: "suites",
          include: ["apps/*/test/**/*.test.ts", "packages/*/test/**/*.test.ts", "tooling/*/test/**/*.test.ts"],
          exclude: [faults, large],
        },
      },
      // The fault tests start 7 processes and 2 servers each and stop them on
      // purpose: they run after every other suite, so their load cannot make
      // the timing of another suite's test, nor theirs, a matter of luck.
      { extends: true, test: { name: "faults", include: [faults, large], sequence: { groupOrder: 1 } } },
    ],
  },
});
