import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

// pnpm typecheck, test and lint run each package's own scripts (turbo.json): a package without them would be
// silently left out, its tests never run.
const root = fileURLToPath(new URL("../../..", import.meta.url));
const globs: string[] = parse(readFileSync(join(root, "pnpm-workspace.yaml"), "utf8")).packages;
const packages = globs.flatMap((glob) => {
  const parent = glob.replace(/\/\*$/, "");
  return readdirSync(join(root, parent)).map((name) => `${parent}/${name}`);
}).filter((dir) => existsSync(join(root, dir, "package.json")) && !dir.endsWith("/proto"));

describe("every workspace package", () => {
  it.each(packages)("%s has its typecheck, lint and (with tests) test tasks", (dir) => {
    const { scripts = {} } = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"));
    expect(existsSync(join(root, dir, "tsconfig.json"))).toBe(true);
    expect(scripts.typecheck).toBe("tsc -p .");
    expect(scripts.lint).toBe("biome check --error-on-warnings . && eslint .");
    if (existsSync(join(root, dir, "test"))) expect(scripts.test).toBe(`vitest run --root ../.. ${dir}/`);
  });
});
