import type { IdArray } from "@loom/contracts/id-arrays";

/**
 * The user message of a run (semantics.md §5): the run's `input`, else the
 * assistant's, as a template where `{{ args[N] }}` is the N-th arg and
 * `{{ args }}` all args joined by a space; with neither, the args joined.
 * An `args[N]` past the end renders as nothing.
 */
export function renderInput(runInput: string | undefined, assistantInput: string | undefined, args: string[]): string {
  const template = runInput ?? assistantInput;
  if (template === undefined) return args.join(" ");
  return template
    .replace(/\{\{\s*args\s*\[\s*(\d+)\s*\]\s*\}\}/g, (_, n: string) => args[Number(n)] ?? "")
    .replace(/\{\{\s*args\s*\}\}/g, args.join(" "));
}

/**
 * A run's effective ids: its own array if given (replacing the assistant's),
 * else the assistant's; then the `additional_*` ids appended, without
 * duplicates (semantics.md §5).
 */
export function effectiveIds(
  assistant: Record<IdArray, string[]>,
  given: Partial<Record<IdArray, string[] | undefined>>,
  additional: Partial<Record<IdArray, string[]>>,
): Record<IdArray, string[]> {
  const pick = (field: IdArray) => [...new Set([...(given[field] ?? assistant[field]), ...(additional[field] ?? [])])];
  return {
    knowledgeBaseIds: pick("knowledgeBaseIds"),
    retrieverIds: pick("retrieverIds"),
    rulesetIds: pick("rulesetIds"),
    structureIds: pick("structureIds"),
    toolIds: pick("toolIds"),
  };
}
