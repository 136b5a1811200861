import { fileURLToPath } from "node:url";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

// The repository's own ESLint configuration, with its ignores lifted: the fixtures stay out of the normal lint run.
const root = fileURLToPath(new URL("../../..", import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
const lint = async (name: string) => {
  const [result] = await new ESLint({ cwd: root, ignore: false }).lintFiles([fixture(name)]);
  return result!.messages.map((m) => ({ rule: m.ruleId, line: m.line }));
};

// Type-aware: the first lint builds the fixtures' TypeScript program.
describe("pnpm lint", { timeout: 120_000 }, () => {
  it("fails on a store write nobody awaits and on an async call nobody awaits", async () => {
    expect(await lint("floating-promise.ts")).toEqual([
      { rule: "@typescript-eslint/no-floating-promises", line: 7 },
      { rule: "@typescript-eslint/no-floating-promises", line: 11 },
    ]);
  });

  it("passes the same code with the promises awaited or voided on purpose", async () => {
    expect(await lint("awaited-promise.ts")).toEqual([]);
  });
});
