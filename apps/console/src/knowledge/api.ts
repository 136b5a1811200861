import { type Pagination, pageQuery, request, segment } from "../api/request.ts";

export interface KnowledgeBase {
  knowledge_base_id: string;
  name: string;
  description: string;
  config: { gtc_pg_vector: { embedding_model: string | null } };
  asset_paths: string[];
  created_at: string;
}

export type KnowledgeBasePage = { knowledge_bases: KnowledgeBase[]; pagination: Pagination };

/** What a person sets on a knowledge base; `embedding_model` null: searched by keywords only. */
export interface KnowledgeBaseFields {
  name: string;
  description: string;
  asset_paths: string[];
  embedding_model: string | null;
}

export type JobStatus = "QUEUED" | "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELLED";

export interface KnowledgeBaseJob {
  knowledge_base_job_id: string;
  status: JobStatus;
  status_detail: string | null;
  bytes_ingested: number;
  errors: { message: string; type: string; path: string }[];
  created_at: string;
  completed_at: string | null;
}

export type KnowledgeBaseJobPage = { knowledge_base_jobs: KnowledgeBaseJob[]; pagination: Pagination };

/** One hit of a query: `meta.artifact` is griptape's TextArtifact of the chunk, as a JSON string. */
export interface QueryEntry {
  id: string;
  score: number;
  meta: { artifact: string };
}

export interface KnowledgeBaseQuery {
  knowledge_base_query_id: string;
  mode: "keyword" | "hybrid";
  entries: QueryEntry[];
}

/** The request body; an empty description is left out (the API takes 1 to 200 characters, or none). */
const body = (fields: KnowledgeBaseFields) => ({
  name: fields.name,
  ...(fields.description ? { description: fields.description } : {}),
  asset_paths: fields.asset_paths,
  config: { gtc_pg_vector: { embedding_model: fields.embedding_model } },
});

const base = (knowledgeBaseId: string) => `/knowledge-bases/${segment(knowledgeBaseId)}`;

export const listKnowledgeBases = (key: string, page: number, pageSize: number) =>
  request<KnowledgeBasePage>(key, "GET", `/knowledge-bases?${pageQuery(page, pageSize)}`);

export const getKnowledgeBase = (key: string, knowledgeBaseId: string) =>
  request<KnowledgeBase>(key, "GET", base(knowledgeBaseId));

export const createKnowledgeBase = (key: string, fields: KnowledgeBaseFields) =>
  request<KnowledgeBase>(key, "POST", "/knowledge-bases", body(fields));

export const updateKnowledgeBase = (key: string, knowledgeBaseId: string, fields: KnowledgeBaseFields) =>
  request<KnowledgeBase>(key, "PATCH", base(knowledgeBaseId), body(fields));

export const deleteKnowledgeBase = (key: string, knowledgeBaseId: string) =>
  request<undefined>(key, "DELETE", base(knowledgeBaseId));

export const createKnowledgeBaseJob = (key: string, knowledgeBaseId: string) =>
  request<KnowledgeBaseJob>(key, "POST", `${base(knowledgeBaseId)}/knowledge-base-jobs`);

export const listKnowledgeBaseJobs = (key: string, knowledgeBaseId: string, page: number, pageSize: number) =>
  request<KnowledgeBaseJobPage>(
    key,
    "GET",
    `${base(knowledgeBaseId)}/knowledge-base-jobs?${pageQuery(page, pageSize)}`,
  );

export const getKnowledgeBaseJob = (key: string, jobId: string) =>
  request<KnowledgeBaseJob>(key, "GET", `/knowledge-base-jobs/${segment(jobId)}`);

export const cancelKnowledgeBaseJob = (key: string, jobId: string) =>
  request<KnowledgeBaseJob>(key, "POST", `/knowledge-base-jobs/${segment(jobId)}/cancel`);

export const queryKnowledgeBase = (key: string, knowledgeBaseId: string, query: string) =>
  request<KnowledgeBaseQuery>(key, "POST", `${base(knowledgeBaseId)}/query`, { query });
