import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

// pnpm test runs each package's own test script (turbo.json), so that an unchanged package's tests are cached: a
// package with tests but no script would be silently left out.
const root = fileURLToPath(new URL("../../..", import.meta.url));
const globs: string[] = parse(readFileSync(join(root, "pnpm-workspace.yaml"), "utf8")).packages;
const packages = globs
  .flatMap((glob) => {
    const parent = glob.replace(/\/\*$/, "");
    return readdirSync(join(root, parent)).map((name) => `${parent}/${name}`);
  })
  .filter((dir) => existsSync(join(root, dir, "package.json")));

describe("every workspace package with tests", () => {
  it.each(packages.filter((dir) => existsSync(join(root, dir, "test"))))("%s runs them in pnpm test", (dir) => {
    const { scripts = {} } = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"));
    expect(scripts.test).toBe(`vitest run --root ../.. ${dir}/`);
  });
});
