/** A list a run's ids of one family came from, by its public field (`body.tool_ids`, `assistant.ruleset_ids`, …). */
export interface IdSource {
  field: string;
  ids: string[];
}

/** Where `id` first appears among `sources`, in order (`body.tool_ids[2]`); undefined when none holds it. */
export function firstPathOf(id: string, sources: IdSource[]): { field: string; path: string } | undefined {
  for (const { field, ids } of sources) {
    const index = ids.findIndex((given) => given.toLowerCase() === id.toLowerCase());
    if (index !== -1) return { field, path: `${field}[${index}]` };
  }
  return undefined;
}
