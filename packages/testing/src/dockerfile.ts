import { readFileSync } from "node:fs";

/** One instruction of a Dockerfile: its keyword (upper case) and the rest of its (joined) lines. */
export interface Instruction {
  keyword: string;
  args: string;
}

export interface Stage {
  /** `AS` name, or the stage's index. */
  name: string;
  /** The base, as written (`${NODE_IMAGE}`) . */
  from: string;
  instructions: Instruction[];
}

export interface Dockerfile {
  /** The global ARGs (before the first FROM) with their defaults. */
  args: Record<string, string>;
  stages: Stage[];
}

/**
 * A Dockerfile read as `docker build` reads it, for the instructions Loom's
 * uses: comment lines dropped (inside continued lines too), lines ending in
 * `\` joined, each instruction split into keyword and arguments.
 */
export function readDockerfile(path: string): Dockerfile {
  const instructions: Instruction[] = [];
  let pending = "";
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (/^\s*#/.test(line)) continue;
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const whole = (pending + line).trim();
    pending = "";
    if (whole === "") continue;
    const [keyword] = whole.split(/\s+/);
    instructions.push({
      keyword: keyword!.toUpperCase(),
      args: whole.slice(keyword!.length).trim().replace(/\s+/g, " "),
    });
  }
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === "FROM") {
      const [from, as, name] = instruction.args.split(" ");
      stages.push({ name: as?.toUpperCase() === "AS" ? name! : String(stages.length), from: from!, instructions: [] });
    } else if (stages.length === 0) {
      if (instruction.keyword === "ARG") Object.assign(args, keyValues(instruction.args, {}));
    } else {
      stages.at(-1)!.instructions.push(instruction);
    }
  }
  return { args, stages };
}

/** `a=1 b="two words"` (ENV, ARG) as a record, `${VAR}` / `$VAR` replaced from `known`. A bare `ARG NAME` has the value "". */
export function keyValues(text: string, known: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const match of text.matchAll(/([A-Za-z_][A-Za-z0-9_]*)(?:=("(?:[^"\\]|\\.)*"|\S*))?/g)) {
    const raw = match[2] ?? "";
    const value = raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, "$1") : raw;
    out[match[1]!] = substitute(value, { ...known, ...out });
  }
  return out;
}

/** `${VAR}` and `$VAR` replaced as Docker does in ENV, WORKDIR, COPY, USER… */
export function substitute(text: string, known: Record<string, string>): string {
  return text.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_, braced, bare) => known[braced ?? bare] ?? "",
  );
}

/** An exec-form instruction's JSON array (CMD ["sh", "-c", "…"]). */
export function execForm(args: string): string[] {
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((part) => typeof part === "string"))
    throw new Error(`not an exec-form array: ${args}`);
  return parsed;
}
