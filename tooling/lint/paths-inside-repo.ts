/**
 * `pnpm lint`'s check that the code cites only what a clone holds: every
 * Markdown file a source file names (`docs/behaviour.md §4`, `../README.md`)
 * exists in the repository, and no relative path climbs out of it. Checks
 * apps/*\/src and packages/*\/src, or the directories given as arguments
 * (the lint test's fixtures); prints each offence and exits 1.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(import.meta.dirname, "../..");
const given = process.argv.slice(2).map((dir) => resolve(dir));

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === "node_modules" || name === "gen") return [];
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|mjs|cjs|js)$/.test(name) ? [path] : [];
  });
}

const roots =
  given.length > 0
    ? given
    : ["apps", "packages"].flatMap((top) => readdirSync(join(root, top)).map((name) => join(root, top, name, "src")));
const offences: string[] = [];
for (const file of roots.flatMap(sourceFiles)) {
  const text = readFileSync(file, "utf8");
  for (const [index, line] of text.split("\n").entries()) {
    const where = `${relative(root, file)}:${index + 1}`;
    for (const [cited] of line.matchAll(/[\w./-]*\.md\b/g)) {
      const inRepo = [resolve(dirname(file), cited), resolve(root, cited)].some(
        (path) => path.startsWith(`${root}/`) && existsSync(path),
      );
      if (!inRepo) offences.push(`${where}: cites ${cited}, which is not a file in the repository`);
    }
    for (const [climb] of line.matchAll(/(?:\.\.\/)+[\w.-]+/g)) {
      const target = resolve(dirname(file), climb);
      if (target !== root && !target.startsWith(`${root}/`)) offences.push(`${where}: ${climb} leaves the repository`);
    }
  }
}
if (offences.length > 0) {
  console.error(offences.join("\n"));
  console.error(`${offences.length} reference(s) to paths outside the repository`);
  process.exit(1);
}
console.log("paths: every Markdown file the sources cite is in the repository");
