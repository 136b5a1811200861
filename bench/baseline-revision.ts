import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "@loom/testing/processes";

/**
 * The revision whose all-in-one process the durable-store rows are read
 * against: the last one whose stores kept everything in memory (issue 15
 * asks for figures within 20% of those). BENCH_BASELINE_REV names another;
 * `none` leaves the rows out.
 */
const defaultRevision = "e32d101";

export interface BaselineRevision {
  rev: string;
  /** How its rows are named: the default revision kept its stores in memory; another is named by its commit. */
  label: string;
  /** Its apps/loom/src/main.ts, for startProcess. */
  main: string;
}

/**
 * Checks the revision out once (a detached git worktree under
 * ~/.cache/loom-bench, its dependencies installed from pnpm's store,
 * offline) and reuses it in later runs.
 */
export function baselineRevision(): BaselineRevision | undefined {
  const wanted = process.env.BENCH_BASELINE_REV ?? defaultRevision;
  if (wanted === "none") return undefined;
  const rev = execFileSync("git", ["rev-parse", "--short", `${wanted}^{commit}`], {
    cwd: repoRoot,
    encoding: "utf8",
  }).trim();
  const dir = join(homedir(), ".cache", "loom-bench", `rev-${rev}`);
  if (!existsSync(join(dir, "node_modules"))) {
    console.log(`checking out ${rev} for the baseline rows (once) into ${dir}`);
    mkdirSync(join(homedir(), ".cache", "loom-bench"), { recursive: true });
    if (!existsSync(dir))
      execFileSync("git", ["worktree", "add", "--detach", dir, rev], { cwd: repoRoot, stdio: "ignore" });
    execFileSync("pnpm", ["install", "--offline", "--frozen-lockfile"], { cwd: dir, stdio: "ignore" });
  }
  const label = wanted === defaultRevision ? `${rev}, in-memory stores` : rev;
  return { rev, label, main: join(dir, "apps/loom/src/main.ts") };
}
