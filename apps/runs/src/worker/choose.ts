import type { QueueEntry } from "../store/run-queue.ts";

export interface ChoicePolicy {
  /** The queue is shared with other processes' workers (`RunQueue.sharedByProcesses`). */
  sharedByProcesses: boolean;
  /** Runs one organization may have executing at once, across workers. */
  maxRunningPerOrganization: number;
}

/**
 * Which candidates a pass claims: oldest first, at most `free`, at most one
 * run per thread (its later runs wait for this one anyway) and, per
 * organization, what its cap leaves: all of that on a store of this process
 * alone, one a pass on a shared one. One claim per organization per pass
 * keeps the overshoot of the cap at one run per replica: a replica's next
 * pass sees its own claims in the leases, the others' only then.
 */
export function choose(
  candidates: QueueEntry[],
  free: number,
  executing: Map<string, number>,
  policy: ChoicePolicy,
): QueueEntry[] {
  const left = new Map<string, number>();
  const threads = new Set<string>();
  const chosen: QueueEntry[] = [];
  for (const entry of candidates) {
    if (chosen.length >= free) break;
    const room =
      left.get(entry.organizationId) ??
      (policy.sharedByProcesses ? 1 : policy.maxRunningPerOrganization - (executing.get(entry.organizationId) ?? 0));
    if (room <= 0 || (entry.threadId && threads.has(entry.threadId))) continue;
    left.set(entry.organizationId, room - 1);
    if (entry.threadId) threads.add(entry.threadId);
    chosen.push(entry);
  }
  return chosen;
}
