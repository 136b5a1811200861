import type { ConnectError } from "@connectrpc/connect";
import { failedPrecondition, unavailable } from "@loom/contracts/errors";
import type { Principal } from "@loom/server/principal";
import type { KnowledgeBaseRecord } from "../store/port.ts";
import type { IngestLimits } from "./limits.ts";
import { type IngestPlan, type PlanDeps, planIngest } from "./plan.ts";
import { JobFailure } from "./retry.ts";

/**
 * Why a job of the knowledge base would be refused now, as a 409 that names the setting, the figures and what to
 * do; undefined when it fits (docs/decisions.md, "Ingest jobs"). Storage not answering is a 503: nothing is queued
 * blindly. The job itself still keeps within both limits, file by file, for files that change before it runs.
 */
export async function refusalOfJob(
  deps: PlanDeps & { limits: IngestLimits },
  kb: KnowledgeBaseRecord,
  principal: Principal,
): Promise<ConnectError | undefined> {
  let plan: IngestPlan;
  try {
    plan = await planIngest(deps, kb, principal, []);
  } catch (error) {
    if (error instanceof JobFailure) return unavailable(`${error.message}; no job was queued: try again`);
    throw error;
  }
  if (plan.toRead.length === 0) return undefined;
  const { maxChunksPerBase, maxBytesPerJob } = deps.limits;
  const scope = { organizationId: kb.organizationId, knowledgeBaseId: kb.id };
  const held = plan.restart ? 0 : await deps.index.countChunks(scope);
  // What stays once the job has removed what it removes and given back the old chunks of the files it reads:
  // at the limit, every file it reads is refused for room, so it could only fail them.
  const given = [...plan.gone, ...plan.toRead.flatMap((f) => (f.before ? [f.before] : []))];
  const kept = held - given.reduce((sum, a) => sum + a.chunkCount, 0);
  const files = `${plan.toRead.length} file${plan.toRead.length === 1 ? "" : "s"} new or changed`;
  if (kept >= maxChunksPerBase && plan.gone.length === 0)
    return failedPrecondition(
      `the knowledge base is full: it holds ${held} chunks, KNOWLEDGE_MAX_CHUNKS_PER_BASE is ${maxChunksPerBase}, and its sources have ${files} with no room for them; take files out of its asset paths or data connectors (a job then removes their chunks), or raise KNOWLEDGE_MAX_CHUNKS_PER_BASE`,
    );
  const bytes = plan.toRead.reduce((sum, f) => sum + f.asset.size, 0);
  if (bytes > maxBytesPerJob)
    return failedPrecondition(
      `the job would read ${bytes} bytes (${files}), more than KNOWLEDGE_MAX_BYTES_PER_JOB (${maxBytesPerJob}); narrow the knowledge base's asset paths or data connectors and widen them again over several jobs (each reads only new or changed files), or raise KNOWLEDGE_MAX_BYTES_PER_JOB`,
    );
  return undefined;
}
