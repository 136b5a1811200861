import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const check = fileURLToPath(new URL("../paths-inside-repo.ts", import.meta.url));
const fixtures = (name: string) => fileURLToPath(new URL(`../fixtures/paths/${name}`, import.meta.url));
const run = (...dirs: string[]) =>
  promisify(execFile)(process.execPath, [check, ...dirs]).then(
    ({ stdout }) => ({ code: 0, output: stdout }),
    (error: { code: number; stderr: string }) => ({ code: error.code, output: error.stderr }),
  );

describe("pnpm lint's paths check", () => {
  it("fails on a source that cites a document beside the checkout, naming the file, the line and the path", async () => {
    const { code, output } = await run(fixtures("outside"));
    expect(code).toBe(1);
    expect(output).toMatch(/cites-outside\.ts:1: cites semantics\.md, which is not a file in the repository/);
    expect(output).toMatch(/cites-outside\.ts:3: .*shared\/design\/architecture\.md.*/);
  });

  it("passes sources that cite the repository's own docs", async () => {
    expect(await run(fixtures("inside"))).toEqual({ code: 0, output: expect.stringContaining("every Markdown file") });
  });

  it("passes the repository's sources", async () => {
    expect((await run()).code).toBe(0);
  });
});
