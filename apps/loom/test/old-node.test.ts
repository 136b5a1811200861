import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "@loom/testing/processes";
import { describe, expect, it } from "vitest";

/**
 * The line tooling/require-node.cjs prints on a Node.js older than 24 (every
 * pnpm command runs it first) comes out whole, trailing newline included,
 * even when its reader is slow. Needs a Node.js older than 24: the one
 * .ci/old-node uses (LOOM_OLD_NODE_BIN, or its cache) or the system's.
 */
const oldNode = [
  process.env.LOOM_OLD_NODE_BIN,
  join(process.env.LOOM_CI_CACHE ?? join(homedir(), ".cache/loom-ci"), "node20/package/bin/node"),
  "/usr/bin/node",
].find(
  (bin): bin is string =>
    bin !== undefined &&
    existsSync(bin) &&
    Number(spawnSync(bin, ["-p", "process.versions.node.split('.')[0]"], { encoding: "utf8" }).stdout.trim()) < 24,
);
if (!oldNode) console.warn("old-node.test.ts skipped: no Node.js older than 24 here (set LOOM_OLD_NODE_BIN)");

describe.skipIf(!oldNode)("the Node.js version check (tooling/require-node.cjs)", () => {
  const version = oldNode
    ? spawnSync(oldNode, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout.trim()
    : "";
  const line = `Loom needs Node.js 24 or newer; this is Node.js ${version} (${oldNode}). See https://nodejs.org/\n`;

  it("prints its one line, newline included, and exits 1", () => {
    const run = spawnSync(oldNode!, ["tooling/require-node.cjs"], { cwd: repoRoot, encoding: "utf8" });
    expect([run.stderr, run.stdout, run.status]).toEqual([line, "", 1]);
  });

  it("prints the whole line into a pipe its reader is slow to empty", () => {
    // The pipe holds 64 KiB: 65,500 bytes already in it leave too little room
    // for the line while the reader sleeps, as behind a busy CI log collector.
    const script =
      '{ head -c 65500 /dev/zero; "$0" tooling/require-node.cjs 2>&1; echo "exit $?"; } | { sleep 1; tr -d "\\0"; }';
    const run = spawnSync("sh", ["-c", script, oldNode!], { cwd: repoRoot, encoding: "utf8" });
    expect(run.stdout).toBe(`${line}exit 1\n`);
  });
});
