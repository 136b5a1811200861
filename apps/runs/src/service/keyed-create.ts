import { Code, ConnectError } from "@connectrpc/connect";
import { invalidArgument } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import type { CreateAssistantRunRequest } from "@loom/proto/runs/v1/runs_pb";
import type { Principal } from "@loom/server/principal";
import { type IdempotencyRecord, type IdempotencyStore, idempotencyWindowMs } from "../store/idempotency.ts";
import type { RunRecord, RunRecordStore } from "../store/run-records.ts";
import type { NewRun } from "./new-run.ts";

export interface KeyedCreateDeps {
  store: IdempotencyStore & RunRecordStore;
  /** The create's checks and its run (`newRun`), under the given id. */
  newRun(
    principal: Principal,
    req: CreateAssistantRunRequest,
    id: string,
    at: Date,
    traceparent: string | undefined,
  ): Promise<NewRun>;
  /** Stores the run (`enqueue`). */
  enqueue(run: NewRun, takeover: boolean): Promise<RunRecord>;
  /** How long a keyed create may go without storing its run before a retry takes the key over. */
  stallMs: number;
  now: () => Date;
}

/** An Idempotency-Key must come with the request's fingerprint (the gateway's), and fit. */
export function checkIdempotencyKey(req: CreateAssistantRunRequest): void {
  if (req.idempotencyKey !== "" && (req.idempotencyKey.length > 255 || req.requestFingerprint === "")) {
    throw invalidArgument([
      { path: "header.Idempotency-Key", message: "must be 1 to 255 characters, with a request fingerprint" },
    ]);
  }
}

/**
 * Creates with an Idempotency-Key. The record names its run's id before the
 * run is stored, so every request with the key answers that one run: a
 * request that finds the record waits for its run to appear; if it does not
 * within `stallMs` (the first request died), one waiter takes the key over (a
 * unique insert per attempt) and stores the run under the recorded id, whose
 * unique _id refuses a second run should the first request wake up.
 * Concurrent creates on this replica with the same key and body wait for the
 * first instead of polling the store.
 */
export function createKeyedCreates(deps: KeyedCreateDeps) {
  const { store, now } = deps;
  /** Keyed creates in progress on this replica. */
  const inProgress = new Map<string, { fingerprint: string; done: Promise<RunRecord> }>();

  async function keyedCreate(
    principal: Principal,
    req: CreateAssistantRunRequest,
    traceparent: string | undefined,
  ): Promise<RunRecord> {
    const { organizationId } = principal;
    const key = req.idempotencyKey;
    // Only a safety net: a waiter takes the key over once the attempt has stalled.
    const giveUp = now().getTime() + 2 * deps.stallMs + 10_000;
    let waits = 0;
    for (;;) {
      const at = now();
      const record = await store.getIdempotency(organizationId, key, new Date(at.getTime() - idempotencyWindowMs));
      if (!record) {
        const prepared = await deps.newRun(principal, req, newId(), at, traceparent);
        const fresh: IdempotencyRecord = {
          organizationId,
          key,
          fingerprint: req.requestFingerprint,
          runId: prepared.run.id,
          createdAt: at,
          attempt: 0,
          attemptAt: at,
        };
        if (!(await store.putIdempotency(fresh))) {
          // Taken meanwhile, or an expired record not pruned yet: drop the latter and look again.
          const stored = await store.getIdempotency(organizationId, key, new Date(0));
          if (stored && at.getTime() - stored.createdAt.getTime() > idempotencyWindowMs)
            await store.deleteIdempotency(organizationId, key, stored.runId);
          continue;
        }
        try {
          return await deps.enqueue(prepared, false);
        } catch (error) {
          await store.deleteIdempotency(organizationId, key, fresh.runId).catch(() => {}); // the key is free for a retry
          throw error;
        }
      }
      if (record.fingerprint !== req.requestFingerprint) {
        throw new ConnectError("this Idempotency-Key was used with a different request", Code.AlreadyExists);
      }
      const run = await store.getRun(organizationId, record.runId);
      if (run) return run;
      const attempt = record.attempt + 1;
      if (
        at.getTime() - record.attemptAt.getTime() > deps.stallMs &&
        (await store.takeOverIdempotency(organizationId, key, attempt, at))
      ) {
        return deps.enqueue(await deps.newRun(principal, req, record.runId, at, traceparent), true);
      }
      if (at.getTime() > giveUp)
        throw new ConnectError("a request with this Idempotency-Key is still in progress", Code.Unavailable);
      // Backing off: many waiters polling at once would slow the very store the first request is writing to.
      await new Promise((resolve) => setTimeout(resolve, Math.min(250, 20 * 2 ** waits++)));
    }
  }

  /** The run of the request's Idempotency-Key: created now, or the one an earlier request made. */
  return async function createKeyed(
    principal: Principal,
    req: CreateAssistantRunRequest,
    traceparent: string | undefined,
  ): Promise<RunRecord> {
    const id = `${principal.organizationId}:${req.idempotencyKey}`;
    const earlier = inProgress.get(id);
    if (earlier?.fingerprint === req.requestFingerprint) {
      const run = await earlier.done.catch(() => undefined);
      if (run) return run;
    }
    if (earlier) return keyedCreate(principal, req, traceparent); // another body, or the first failed: decide on the record
    const done = keyedCreate(principal, req, traceparent);
    inProgress.set(id, { fingerprint: req.requestFingerprint, done });
    try {
      return await done;
    } finally {
      inProgress.delete(id);
    }
  };
}
