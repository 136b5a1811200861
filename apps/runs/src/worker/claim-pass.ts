import type { QueueEntry, RunQueue } from "../store/run-queue.ts";
import type { RunRecord } from "../store/run-records.ts";
import { choose } from "./choose.ts";

export interface ClaimPassDeps {
  store: RunQueue;
  maxRunningPerOrganization: number;
  /** Claims one entry (`createClaim`). */
  claim(entry: QueueEntry): Promise<RunRecord | undefined>;
  /** The worker is stopping: a pass claims nothing more. */
  stopped(): boolean;
}

/**
 * One pass over the queue: reads what is executing (one read of the leases),
 * then the oldest queued runs outside full organizations and busy threads
 * (one read of the queue), chooses (`choose`) and claims them all at once,
 * so a pass costs a few store round trips however many it starts (on
 * SQLite, their writes share one commit). `drained`: everything read was
 * claimed and nothing was held back by a cap or a busy thread.
 */
export async function claimPass(
  deps: ClaimPassDeps,
  free: number,
): Promise<{ claimed: RunRecord[]; drained: boolean }> {
  const { store } = deps;
  const load = await store.executingLoad();
  const full = [...load.perOrganization].filter(([, n]) => n >= deps.maxRunningPerOrganization).map(([org]) => org);
  // Every candidate is outside a full organization and a busy thread, so a few per free slot fill it; a
  // shared store claims one per organization a pass, and reads more to find enough organizations.
  const limit = store.sharedByProcesses ? Math.max(50, free * 4) : free * 4;
  const candidates = await store.queueCandidates(full, [...load.threads], limit);
  const chosen = deps.stopped()
    ? []
    : choose(candidates, free, load.perOrganization, {
        sharedByProcesses: store.sharedByProcesses,
        maxRunningPerOrganization: deps.maxRunningPerOrganization,
      });
  // Settled one by one: a claim that failed does not take the others (moved to STARTING already) with it.
  const claimed = (await Promise.allSettled(chosen.map(deps.claim))).flatMap((result) =>
    result.status === "fulfilled" && result.value ? [result.value] : [],
  );
  const drained =
    full.length === 0 && load.threads.size === 0 && candidates.length < limit && claimed.length === candidates.length;
  return { claimed, drained };
}
