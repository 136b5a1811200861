import type { Violation } from "@loom/contracts/errors";

/** A list a run's ids of one family came from, by its public field (`body.ruleset_ids`, `assistant.ruleset_ids`, …). */
export interface IdSource {
  field: string;
  ids: string[];
}

/**
 * The violation for an id that names no `what` of the organization, at the
 * field it came from: `sources` in order, the first list holding the id names
 * it. An id from the assistant's list says how to replace that list
 * (`replacedBy`, the run's field).
 */
export function unknownId(what: string, replacedBy: string, id: string, sources: IdSource[]): Violation {
  for (const { field, ids } of sources) {
    const index = ids.findIndex((given) => given.toLowerCase() === id.toLowerCase());
    if (index === -1) continue;
    const path = `${field}[${index}]`;
    return field.startsWith("assistant.")
      ? {
          path,
          message: `the assistant names ${what} ${id}, which does not exist in the organization; give ${replacedBy} to replace the assistant's list`,
        }
      : { path, message: `no ${what} ${id} in the organization` };
  }
  return { path: sources[0]?.field ?? `body.${replacedBy}`, message: `no ${what} ${id} in the organization` };
}
