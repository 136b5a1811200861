/**
 * Assistant runs this gateway has seen exist, by organization: the ones it
 * created, and the ones whose existence a stream checked. Runs are never
 * deleted (a deleted assistant's runs stay readable by id), so a run once
 * known stays so, and a stream of it needs no GetAssistantRun to tell it from
 * an unknown run (the 404 before streaming). Bounded, oldest out: a run
 * forgotten is only checked again.
 */
export interface KnownRuns {
  add(organizationId: string, runId: string): void;
  has(organizationId: string, runId: string): boolean;
}

export function createKnownRuns(max = 10_000): KnownRuns {
  const known = new Set<string>();
  return {
    add(organizationId, runId) {
      const key = `${organizationId}/${runId}`;
      if (known.has(key)) return;
      if (known.size >= max) known.delete(known.values().next().value!);
      known.add(key);
    },
    has: (organizationId, runId) => known.has(`${organizationId}/${runId}`),
  };
}
