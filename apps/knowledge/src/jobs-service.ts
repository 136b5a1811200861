import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client, ServiceImpl } from "@connectrpc/connect";
import { notFound } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import {
  type KnowledgeBaseJobSchema,
  KnowledgeBaseJobStatus,
  type KnowledgeBaseJobsService,
} from "@loom/proto/knowledge/v1/knowledge_base_jobs_pb";
import type { StorageService } from "@loom/proto/storage/v1/storage_pb";
import { requirePrincipal } from "@loom/server/principal";
import type { ChunkIndex } from "./index/port.ts";
import { refusalOfJob } from "./ingest/admit-job.ts";
import type { IngestLimits } from "./ingest/limits.ts";
import type { JobStatus, KnowledgeBaseJobRecord } from "./store/jobs.ts";
import type { KnowledgeBasesStore } from "./store/port.ts";

export interface JobsHandlersDeps {
  store: KnowledgeBasesStore;
  /** The index and storage's listing: a job past the limits is refused before it is written. */
  index: ChunkIndex;
  storage: Client<typeof StorageService>;
  limits: IngestLimits;
  /** Tells this process's worker a job is queued (other replicas find it at their next poll). */
  queued: () => void;
  now: () => Date;
}

/** The KnowledgeBaseJobsService handlers: jobs are written here and run by the ingest worker (ingest/worker.ts). */
export function createJobsHandlers(deps: JobsHandlersDeps): ServiceImpl<typeof KnowledgeBaseJobsService> {
  const { store, queued, now } = deps;
  return {
    async createKnowledgeBaseJob(req, ctx) {
      const principal = requirePrincipal(ctx);
      const kb = await store.get(principal.organizationId, req.knowledgeBaseId.toLowerCase());
      if (!kb) throw notFound("knowledge base");
      const refusal = await refusalOfJob(deps, kb, principal);
      if (refusal) throw refusal;
      const at = now();
      const job: KnowledgeBaseJobRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        knowledgeBaseId: kb.id,
        status: "QUEUED",
        statusDetail: "",
        bytesIngested: 0,
        errors: [],
        cancelRequested: false,
        attempts: 0,
        createdBy: principal.userId,
        createdAt: at,
        updatedAt: at,
      };
      await store.insertJob(job);
      queued();
      return { knowledgeBaseJob: jobMessage(job) };
    },

    async getKnowledgeBaseJob(req, ctx) {
      const job = await store.getJob(requirePrincipal(ctx).organizationId, req.knowledgeBaseJobId.toLowerCase());
      if (!job) throw notFound("knowledge base job");
      return { knowledgeBaseJob: jobMessage(job) };
    },

    async listKnowledgeBaseJobs(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const window = pageWindow(req.page);
      const kbId = req.knowledgeBaseId.toLowerCase();
      if (!(await store.get(organizationId, kbId))) throw notFound("knowledge base");
      const statuses = req.statuses.map((s) => KnowledgeBaseJobStatus[s] as JobStatus);
      const { items, totalCount } = await store.listJobs(organizationId, kbId, statuses, window.skip, window.pageSize);
      return { knowledgeBaseJobs: items.map(jobMessage), page: pageInfo(window, totalCount) };
    },

    async cancelKnowledgeBaseJob(req, ctx) {
      const job = await store.cancelJob(
        requirePrincipal(ctx).organizationId,
        req.knowledgeBaseJobId.toLowerCase(),
        now(),
      );
      if (!job) throw notFound("knowledge base job");
      return { knowledgeBaseJob: jobMessage(job) };
    },
  };
}

const statusOf: Record<JobStatus, KnowledgeBaseJobStatus> = {
  QUEUED: KnowledgeBaseJobStatus.QUEUED,
  RUNNING: KnowledgeBaseJobStatus.RUNNING,
  SUCCEEDED: KnowledgeBaseJobStatus.SUCCEEDED,
  FAILED: KnowledgeBaseJobStatus.FAILED,
  CANCELLED: KnowledgeBaseJobStatus.CANCELLED,
};

function jobMessage(job: KnowledgeBaseJobRecord): MessageInitShape<typeof KnowledgeBaseJobSchema> {
  return {
    knowledgeBaseJobId: job.id,
    knowledgeBaseId: job.knowledgeBaseId,
    organizationId: job.organizationId,
    status: statusOf[job.status],
    statusDetail: job.statusDetail,
    bytesIngested: BigInt(job.bytesIngested),
    errors: job.errors,
    createdAt: timestampFromDate(job.createdAt),
    createdBy: job.createdBy,
    updatedAt: timestampFromDate(job.updatedAt),
    ...(job.completedAt && { completedAt: timestampFromDate(job.completedAt) }),
  };
}
