import { randomUUID } from "node:crypto";
import type { Logger } from "@loom/telemetry/logger";
import type { KnowledgeBaseJobRecord } from "../store/jobs.ts";
import type { KnowledgeBasesStore } from "../store/port.ts";
import { JobFailure } from "./retry.ts";
import type { JobEnd } from "./run-job.ts";

/** How many times a job is taken up before it ends FAILED: each time after the first, its worker was lost. */
export const maxJobAttempts = 3;

/** Runs one job; asks `goOn` between steps and stops when it says no. */
export type JobRunner = (
  job: KnowledgeBaseJobRecord,
  goOn: () => Promise<boolean>,
  signal: AbortSignal,
) => Promise<JobEnd>;

export interface IngestWorkerOptions {
  store: KnowledgeBasesStore;
  run: JobRunner;
  logger: Logger;
  /** How long a knowledge base's lock lasts without renewal; renewed every third of it. */
  leaseMs: number;
  /** How often to look for queued jobs when nothing woke the worker. */
  pollMs: number;
  /** Jobs (of different knowledge bases) this worker runs at once. */
  concurrency?: number;
  now?: () => Date;
  workerId?: string;
}

export interface IngestWorker {
  readonly workerId: string;
  start(): void;
  /** Looks for work now (a job was just created here). */
  wake(): void;
  /** Stops taking jobs and stops those running; their locks are given back, so another worker takes them up at once. */
  stop(): Promise<void>;
}

/**
 * Takes up unfinished jobs, one per knowledge base across every replica sharing the store: a job runs while its
 * worker holds the knowledge base's lock, a lease renewed every third of `leaseMs`. A worker that dies stops renewing;
 * once the lease has run out another takes the job up again (it resumes: the files it finished are skipped by
 * version), at most {@link maxJobAttempts} times, then the job ends FAILED saying so (docs/decisions.md, "Ingest jobs").
 */
export function createIngestWorker(options: IngestWorkerOptions): IngestWorker {
  const { store, logger, leaseMs } = options;
  const now = options.now ?? (() => new Date());
  const workerId = options.workerId ?? `ingest-${randomUUID()}`;
  const concurrency = options.concurrency ?? 2;
  const running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;
  let passing: Promise<void> | undefined;
  let again = false;
  const leaseUntil = () => new Date(now().getTime() + leaseMs);

  function pump(): void {
    if (stopped) return;
    if (passing) {
      again = true;
      return;
    }
    passing = claimPass()
      .catch((error) =>
        logger.warn({ err: error }, "ingest worker: looking for jobs failed; trying again at the next poll"),
      )
      .finally(() => {
        passing = undefined;
        if (again) {
          again = false;
          pump();
        }
      });
  }

  async function claimPass(): Promise<void> {
    if (running.size >= concurrency) return;
    // The oldest unfinished job of each knowledge base is the one that may run: a later one waits QUEUED.
    const firstPerBase = new Map<string, KnowledgeBaseJobRecord>();
    for (const job of await store.unfinishedJobs(100))
      if (!firstPerBase.has(job.knowledgeBaseId)) firstPerBase.set(job.knowledgeBaseId, job);
    for (const job of firstPerBase.values()) {
      if (stopped || running.size >= concurrency) return;
      if (running.has(job.knowledgeBaseId)) continue;
      if (!(await store.lockKnowledgeBase(job.knowledgeBaseId, job.id, workerId, leaseUntil(), now()))) continue;
      const abort = new AbortController();
      const done = execute(job, abort).finally(() => {
        running.delete(job.knowledgeBaseId);
        pump();
      });
      running.set(job.knowledgeBaseId, { abort, done });
    }
  }

  async function execute(claimed: KnowledgeBaseJobRecord, abort: AbortController): Promise<void> {
    const kbId = claimed.knowledgeBaseId;
    let lost = false;
    const renewal = setInterval(
      () => {
        store
          .renewLock(kbId, workerId, leaseUntil())
          .then((held) => {
            if (!held) {
              lost = true;
              abort.abort(new Error("the knowledge base's lock was lost"));
            }
          })
          .catch((error) => logger.warn({ err: error, job: claimed.id }, "ingest worker: renewing a lock failed"));
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    try {
      // Read again under the lock: a cancel or a finish may have come since the list.
      const job = await store.getJob(claimed.organizationId, claimed.id);
      if (!job || (job.status !== "QUEUED" && job.status !== "RUNNING")) return;
      const finish = (end: JobEnd) => store.updateUnfinishedJob(job.id, { ...end, completedAt: now() }, now());
      if (job.attempts >= maxJobAttempts) {
        await finish({
          status: "FAILED",
          statusDetail: `its worker stopped ${job.attempts} times before it finished (a crash or a lost lease); the files it finished are in the index`,
        });
        return;
      }
      if (job.cancelRequested) {
        await finish({ status: "CANCELLED", statusDetail: "cancelled before it started" });
        return;
      }
      if (!(await store.updateUnfinishedJob(job.id, { status: "RUNNING", attempts: job.attempts + 1 }, now()))) return;
      logger.info({ job: job.id, knowledgeBase: kbId, attempt: job.attempts + 1 }, "ingest job started");
      const goOn = async () => {
        if (lost || stopped) return false;
        const current = await store.getJob(job.organizationId, job.id);
        return current !== undefined && current.status === "RUNNING" && !current.cancelRequested;
      };
      let end: JobEnd | undefined;
      try {
        end = await options.run(job, goOn, abort.signal);
      } catch (error) {
        if (!lost && !stopped) {
          if (!(error instanceof JobFailure)) logger.error({ err: error, job: job.id }, "ingest job failed");
          end = { status: "FAILED", statusDetail: (error as Error).message };
        }
      }
      if (lost) return;
      if (!end || (stopped && end.status !== "SUCCEEDED")) {
        // Stopped on purpose (a restart): not a lost worker, so this attempt does not count.
        await store.updateUnfinishedJob(job.id, { attempts: job.attempts }, now());
        return;
      }
      await finish(end);
      logger.info({ job: job.id, status: end.status, detail: end.statusDetail }, "ingest job ended");
    } finally {
      clearInterval(renewal);
      if (!lost) await store.releaseLock(kbId, workerId).catch(() => {});
    }
  }

  return {
    workerId,
    start() {
      stopped = false;
      timer = setInterval(pump, options.pollMs);
      pump();
    },
    wake: pump,
    async stop() {
      stopped = true;
      clearInterval(timer);
      for (const { abort } of running.values()) abort.abort(new Error("the knowledge service is stopping"));
      await Promise.allSettled([...running.values()].map((r) => r.done));
      await passing;
    },
  };
}
