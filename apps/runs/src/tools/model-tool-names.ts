import { createHash } from "node:crypto";
import { nativeToolName } from "../chat/tool-names.ts";

/** What providers accept as a tool's name (OpenAI's and Anthropic's limit, the strictest of those Loom speaks). */
export const modelToolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;
const maxLength = 64;

/**
 * Names the run's activities for the model: `<tool>_<activity>`, as griptape
 * names a native tool (docs/behaviour.md §5, "Runs with tools"). The tools
 * service gives names of letters, digits and `_` only, so the one thing that
 * can go wrong is a name too long or already taken (two tools of one name, or
 * `a_b`+`c` against `a`+`b_c`): that one becomes its first 55 characters,
 * `_` and 8 hex digits of a hash of the tool's id and the activity, so it is
 * the same at every step and in every run. Any other character is
 * replaced by `_` first, in case a tool server's name slipped through.
 */
export function createModelToolNames() {
  const taken = new Set<string>();
  return (tool: { id: string; name: string }, activity: string): string => {
    const plain = nativeToolName(tool.name, activity).replace(/[^a-zA-Z0-9_-]/g, "_");
    let name = plain;
    if (name.length > maxLength || taken.has(name)) {
      const hash = createHash("sha256").update(`${tool.id}\n${activity}`).digest("hex").slice(0, 8);
      name = `${plain.slice(0, maxLength - 9)}_${hash}`;
    }
    taken.add(name);
    return name;
  };
}
