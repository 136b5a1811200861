import { heldRows } from "@loom/store/held-rows";
import type { SqliteHandle } from "@loom/store/sqlite";

/** Records held after a read, at most this many of each kind (all forgotten past it): every run's create reads its rulesets and their rules. */
const heldLimit = 10_000;

/** Freezes a JSON value all the way down: held records share their JSON (metadata, a JSON-schema rule) with every caller. */
function frozen<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) frozen(inner);
    Object.freeze(value);
  }
  return value;
}

/**
 * An organization's records by id, held in memory once read and written
 * through by the store's own calls (kit `heldRows`: the database is this
 * process's alone). Callers get copies of the arrays and dates; the JSON
 * inside is frozen and shared.
 */
export function heldById<R extends { id: string; organizationId: string }>(
  handle: SqliteHandle,
  options: {
    /** A copy no caller shares but for its frozen JSON. */
    copy(record: R): R;
    /** The organization's records among `ids`, from the table. */
    select(organizationId: string, ids: readonly string[]): R[];
    /** Its JSON members, frozen when held. */
    json(record: R): unknown[];
  },
) {
  const held = heldRows<R>(handle, heldLimit);
  const hold = (record: R | undefined): R | undefined => {
    if (!record) return undefined;
    options.json(record).forEach(frozen);
    held.hold(record.id, record);
    return options.copy(record);
  };
  return {
    hold,
    forget: (id: string) => held.forget(id),
    /** The organization's records among `ids`, each once, in no particular order. */
    get(organizationId: string, ids: readonly string[]): R[] {
      const found: R[] = [];
      const missing: string[] = [];
      for (const id of new Set(ids)) {
        const kept = held.get(id);
        if (!kept) missing.push(id);
        else if (kept.organizationId === organizationId) found.push(options.copy(kept));
      }
      if (missing.length > 0) for (const record of options.select(organizationId, missing)) found.push(hold(record)!);
      return found;
    },
  };
}
