import { type KnowledgeBaseJob, KnowledgeBaseJobStatus } from "@loom/proto/knowledge/v1/knowledge_base_jobs_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { knowledgeBaseJobListSchema, knowledgeBaseJobSchema, knowledgeBaseJobStatuses } from "../schemas.ts";
import { pageQuery, statusQueryOf, uuid } from "../validation.ts";

/** An ingest job in Griptape Cloud's KnowledgeBaseJobDetail shape (docs/api.md, Knowledge base jobs). */
export function knowledgeBaseJobJson(job: KnowledgeBaseJob | undefined) {
  if (!job) throw new Error("the knowledge service answered without a job");
  return {
    knowledge_base_job_id: job.knowledgeBaseJobId,
    knowledge_base_id: job.knowledgeBaseId,
    organization_id: job.organizationId,
    status: KnowledgeBaseJobStatus[job.status] as (typeof knowledgeBaseJobStatuses)[number],
    status_detail: job.statusDetail === "" ? null : job.statusDetail,
    bytes_ingested: Number(job.bytesIngested),
    errors: job.errors.map((e) => ({ message: e.message, type: e.type, path: e.path })),
    created_at: isoTime(job.createdAt),
    created_by: job.createdBy,
    updated_at: isoTime(job.updatedAt),
    completed_at: job.completedAt ? isoTime(job.completedAt) : null,
  };
}

export function knowledgeBaseJobOperations({ knowledgeBaseJobs }: ServiceClients) {
  const jobPath = z.object({ knowledge_base_job_id: uuid });
  return [
    defineOperation({
      id: "CreateKnowledgeBaseJob",
      method: "POST",
      path: "/knowledge-bases/{knowledge_base_id}/knowledge-base-jobs",
      summary:
        "Queues an ingest of the knowledge base's files: new and changed files are read, chunked, embedded (with its model) and indexed, unchanged ones skipped, removed ones taken out",
      params: z.object({ knowledge_base_id: uuid }),
      response: { status: 202, description: "The job, QUEUED", schema: knowledgeBaseJobSchema },
      handle: async ({ params, call }) =>
        knowledgeBaseJobJson(
          (await knowledgeBaseJobs.createKnowledgeBaseJob({ knowledgeBaseId: params.knowledge_base_id }, call))
            .knowledgeBaseJob,
        ),
    }),
    defineOperation({
      id: "ListKnowledgeBaseJobs",
      method: "GET",
      path: "/knowledge-bases/{knowledge_base_id}/knowledge-base-jobs",
      summary: "A knowledge base's ingest jobs, newest first, optionally only those in the given statuses",
      params: z.object({ knowledge_base_id: uuid }),
      query: pageQuery.extend({ status: statusQueryOf(knowledgeBaseJobStatuses) }),
      response: { status: 200, description: "A page of jobs", schema: knowledgeBaseJobListSchema },
      async handle({ params, query, call }) {
        const res = await knowledgeBaseJobs.listKnowledgeBaseJobs(
          {
            knowledgeBaseId: params.knowledge_base_id,
            page: { page: query.page, pageSize: query.page_size },
            statuses: query.status.map((s) => KnowledgeBaseJobStatus[s]),
          },
          call,
        );
        return {
          knowledge_base_jobs: res.knowledgeBaseJobs.map(knowledgeBaseJobJson),
          pagination: pagination(res.page),
        };
      },
    }),
    defineOperation({
      id: "GetKnowledgeBaseJob",
      method: "GET",
      path: "/knowledge-base-jobs/{knowledge_base_job_id}",
      summary: "One ingest job",
      params: jobPath,
      response: { status: 200, description: "The job", schema: knowledgeBaseJobSchema },
      handle: async ({ params, call }) =>
        knowledgeBaseJobJson(
          (await knowledgeBaseJobs.getKnowledgeBaseJob({ knowledgeBaseJobId: params.knowledge_base_job_id }, call))
            .knowledgeBaseJob,
        ),
    }),
    defineOperation({
      id: "CancelKnowledgeBaseJob",
      method: "POST",
      path: "/knowledge-base-jobs/{knowledge_base_job_id}/cancel",
      summary:
        "Cancels an ingest job: a QUEUED one at once, a RUNNING one between two files or embedding batches (each file stays as it was or as the job made it); a finished one is answered as it is",
      params: jobPath,
      response: { status: 200, description: "The job as it is now", schema: knowledgeBaseJobSchema },
      handle: async ({ params, call }) =>
        knowledgeBaseJobJson(
          (await knowledgeBaseJobs.cancelKnowledgeBaseJob({ knowledgeBaseJobId: params.knowledge_base_job_id }, call))
            .knowledgeBaseJob,
        ),
    }),
  ];
}
