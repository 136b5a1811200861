import type {
  KnowledgeBaseQuery,
  KnowledgeBaseSearch,
  QueryEntry,
} from "@loom/proto/knowledge/v1/knowledge_base_queries_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import {
  knowledgeBaseQueryListSchema,
  knowledgeBaseQuerySchema,
  knowledgeBaseSearchListSchema,
  knowledgeBaseSearchSchema,
} from "../schemas.ts";
import { pageQuery, uuid } from "../validation.ts";

/**
 * What griptape's GriptapeCloudVectorStoreDriver sends: `count`, `distance_metric`, `filter`, `include_vectors`,
 * each only when its caller gave it (docs/decisions.md, "Querying knowledge bases").
 */
const queryArgs = z.object({
  count: z
    .number()
    .int()
    .min(1)
    .max(100)
    .optional()
    .meta({ description: "How many chunks to find, 1 to 100 (default 5)" }),
  include_vectors: z
    .boolean()
    .optional()
    .meta({ description: "Also answer each chunk's embedding, in `vector` (default false)" }),
  // Ranks are cosine similarity's (vector search) and BM25's: the metric is not the caller's to pick.
  distance_metric: z.string().optional().meta({ description: "Accepted and ignored: vector search is cosine" }),
  filter: z
    .record(z.string(), z.unknown())
    .optional()
    .meta({ description: "Refused when not empty: Loom filters nothing" }),
});

const queryText = z.string().meta({ description: "What to look for, in words (1 to 10,000 characters)" });

const queryBody = z.object({
  query: queryText,
  query_args: queryArgs.optional().meta({ description: "How many chunks, and whether with their embeddings" }),
});

const searchBody = z.object({
  query: queryText,
  query_args: queryArgs
    .pick({ count: true, filter: true })
    .optional()
    .meta({ description: "How many chunks to write the answer from" }),
});

/** A chunk found, as griptape's vector store entry: exactly its keys. */
const entryJson = (e: QueryEntry) => ({
  id: e.id,
  score: e.score,
  vector: e.hasVector ? e.vector : null,
  meta: { artifact: e.artifactJson },
  namespace: null,
});

/** A kept search in Griptape Cloud's KnowledgeBaseSearchDetail shape (docs/api.md, Querying knowledge bases). */
export function knowledgeBaseSearchJson(q: KnowledgeBaseSearch | undefined) {
  if (!q) throw new Error("the knowledge service answered without a knowledge base search");
  return {
    knowledge_base_search_id: q.knowledgeBaseSearchId,
    knowledge_base_id: q.knowledgeBaseId,
    query: q.query,
    result: q.result,
    model: q.model,
    entries: q.entries.map(entryJson),
    created_at: isoTime(q.createdAt),
    created_by: q.createdBy,
  };
}

/** A kept query in Griptape Cloud's KnowledgeBaseQueryDetail shape (docs/api.md, Querying knowledge bases). */
export function knowledgeBaseQueryJson(q: KnowledgeBaseQuery | undefined) {
  if (!q) throw new Error("the knowledge service answered without a knowledge base query");
  return {
    knowledge_base_query_id: q.knowledgeBaseQueryId,
    knowledge_base_id: q.knowledgeBaseId,
    query: q.query,
    query_args: { count: q.count, include_vectors: q.includeVectors },
    mode: q.mode as "keyword" | "hybrid",
    entries: q.entries.map(entryJson),
    created_at: isoTime(q.createdAt),
    created_by: q.createdBy,
  };
}

export function knowledgeBaseQueryOperations({ knowledgeBaseQueries }: ServiceClients) {
  const knowledgeBasePath = z.object({ knowledge_base_id: uuid });
  return [
    defineOperation({
      id: "QueryKnowledgeBase",
      method: "POST",
      path: "/knowledge-bases/{knowledge_base_id}/query",
      summary:
        "The chunks of a knowledge base that best match a query, as griptape vector store entries: by keywords, fused with vector search when it has an embedding model; the query is kept",
      params: knowledgeBasePath,
      body: { schema: queryBody, required: true },
      response: {
        status: 200,
        description: "The query and the chunks found, best first",
        schema: knowledgeBaseQuerySchema,
      },
      handle: async ({ params, body, call }) =>
        knowledgeBaseQueryJson(
          (
            await knowledgeBaseQueries.queryKnowledgeBase(
              {
                knowledgeBaseId: params.knowledge_base_id,
                query: body.query,
                count: body.query_args?.count,
                includeVectors: body.query_args?.include_vectors ?? false,
                hasFilter: Object.keys(body.query_args?.filter ?? {}).length > 0,
              },
              call,
            )
          ).knowledgeBaseQuery,
        ),
    }),
    defineOperation({
      id: "GetKnowledgeBaseQuery",
      method: "GET",
      path: "/knowledge-base-queries/{knowledge_base_query_id}",
      summary: "One kept query of a knowledge base, with the chunks it found",
      params: z.object({ knowledge_base_query_id: uuid }),
      response: { status: 200, description: "The query", schema: knowledgeBaseQuerySchema },
      handle: async ({ params, call }) =>
        knowledgeBaseQueryJson(
          (
            await knowledgeBaseQueries.getKnowledgeBaseQuery(
              { knowledgeBaseQueryId: params.knowledge_base_query_id },
              call,
            )
          ).knowledgeBaseQuery,
        ),
    }),
    defineOperation({
      id: "ListKnowledgeBaseQueries",
      method: "GET",
      path: "/knowledge-bases/{knowledge_base_id}/queries",
      summary: "A knowledge base's kept queries, newest first",
      params: knowledgeBasePath,
      query: pageQuery,
      response: { status: 200, description: "A page of queries", schema: knowledgeBaseQueryListSchema },
      async handle({ params, query, call }) {
        const res = await knowledgeBaseQueries.listKnowledgeBaseQueries(
          { knowledgeBaseId: params.knowledge_base_id, page: { page: query.page, pageSize: query.page_size } },
          call,
        );
        return {
          knowledge_base_queries: res.knowledgeBaseQueries.map(knowledgeBaseQueryJson),
          pagination: pagination(res.page),
        };
      },
    }),
    defineOperation({
      id: "SearchKnowledgeBase",
      method: "POST",
      path: "/knowledge-bases/{knowledge_base_id}/search",
      summary:
        "An answer written by the deployment's search model (KNOWLEDGE_SEARCH_MODEL) from the chunks of a knowledge base that best match the query; the search is kept",
      params: knowledgeBasePath,
      body: { schema: searchBody, required: true },
      response: { status: 200, description: "The search and its answer", schema: knowledgeBaseSearchSchema },
      handle: async ({ params, body, call }) =>
        knowledgeBaseSearchJson(
          (
            await knowledgeBaseQueries.searchKnowledgeBase(
              {
                knowledgeBaseId: params.knowledge_base_id,
                query: body.query,
                count: body.query_args?.count,
                hasFilter: Object.keys(body.query_args?.filter ?? {}).length > 0,
              },
              call,
            )
          ).knowledgeBaseSearch,
        ),
    }),
    defineOperation({
      id: "GetKnowledgeBaseSearch",
      method: "GET",
      path: "/knowledge-base-searches/{knowledge_base_search_id}",
      summary: "One kept search of a knowledge base, with its answer",
      params: z.object({ knowledge_base_search_id: uuid }),
      response: { status: 200, description: "The search", schema: knowledgeBaseSearchSchema },
      handle: async ({ params, call }) =>
        knowledgeBaseSearchJson(
          (
            await knowledgeBaseQueries.getKnowledgeBaseSearch(
              { knowledgeBaseSearchId: params.knowledge_base_search_id },
              call,
            )
          ).knowledgeBaseSearch,
        ),
    }),
    defineOperation({
      id: "ListKnowledgeBaseSearches",
      method: "GET",
      path: "/knowledge-bases/{knowledge_base_id}/searches",
      summary: "A knowledge base's kept searches, newest first",
      params: knowledgeBasePath,
      query: pageQuery,
      response: { status: 200, description: "A page of searches", schema: knowledgeBaseSearchListSchema },
      async handle({ params, query, call }) {
        const res = await knowledgeBaseQueries.listKnowledgeBaseSearches(
          { knowledgeBaseId: params.knowledge_base_id, page: { page: query.page, pageSize: query.page_size } },
          call,
        );
        return {
          knowledge_base_searches: res.knowledgeBaseSearches.map(knowledgeBaseSearchJson),
          pagination: pagination(res.page),
        };
      },
    }),
  ];
}
