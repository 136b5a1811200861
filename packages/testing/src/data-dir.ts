import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];
process.once("exit", () => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A data directory of its own for one all-in-one process (LOOM_DATA_DIR), removed when the test process exits. */
export function freshDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "loom-data-"));
  made.push(dir);
  return dir;
}
