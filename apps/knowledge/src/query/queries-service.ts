import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { invalidArgument, notFound, type Violation } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { checkText } from "@loom/contracts/text";
import type {
  KnowledgeBaseQueriesService,
  KnowledgeBaseQuerySchema,
  KnowledgeBaseSearchSchema,
  QueryEntrySchema,
} from "@loom/proto/knowledge/v1/knowledge_base_queries_pb";
import { requirePrincipal } from "@loom/server/principal";
import type { ChunkIndex } from "../index/port.ts";
import { searchChunks } from "../index/search.ts";
import type { KnowledgeBasesStore } from "../store/port.ts";
import type { KnowledgeBaseQueryRecord, KnowledgeBaseSearchRecord, QueryEntryRecord } from "../store/queries.ts";
import { chunkArtifactJson } from "./artifact.ts";
import type { EmbedText } from "./embed-query.ts";
import type { AnswerFromChunks } from "./search-model.ts";

/** griptape's `BaseVectorStoreDriver.DEFAULT_QUERY_COUNT`: what its driver means when it sends no count. */
export const defaultQueryCount = 5;
/** The most chunks one query answers: a prompt's worth many times over, and a bound on the kept entries. */
export const maxQueryCount = 100;
/** The longest query: a question, or a paragraph to find the like of; not a document. */
export const maxQueryChars = 10_000;

export interface QueriesDeps {
  store: KnowledgeBasesStore;
  index: ChunkIndex;
  embed: EmbedText;
  /** Writes a search's answer (KNOWLEDGE_SEARCH_MODEL). */
  answer: AnswerFromChunks;
  now: () => Date;
}

/** KnowledgeBaseQueriesService: a knowledge base's chunks searched, and each query kept (docs/decisions.md, "Querying knowledge bases"). */
export function createQueriesHandlers({
  store,
  index,
  embed,
  answer,
  now,
}: QueriesDeps): ServiceImpl<typeof KnowledgeBaseQueriesService> {
  /**
   * The chunks of the caller's knowledge base that best match a query: its text and count checked, then keywords
   * alone or fused with vectors (the query embedded by the knowledge base's model). Shared by queries and searches.
   */
  async function retrieve(
    ctx: Parameters<typeof requirePrincipal>[0],
    req: { knowledgeBaseId: string; query: string; count?: number; hasFilter: boolean },
    includeVectors: boolean,
  ) {
    const principal = requirePrincipal(ctx);
    const violations: Violation[] = [];
    checkText(violations, "body.query", req.query, maxQueryChars);
    const count = req.count ?? defaultQueryCount;
    if (!Number.isInteger(count) || count < 1 || count > maxQueryCount)
      violations.push({ path: "body.query_args.count", message: `must be 1..${maxQueryCount}` });
    if (req.hasFilter)
      violations.push({ path: "body.query_args.filter", message: "Loom filters no query: leave it out" });
    const kb = await store.get(principal.organizationId, req.knowledgeBaseId);
    if (!kb) throw notFound("knowledge base");
    if (violations.length > 0) throw invalidArgument(violations);
    const scope = { organizationId: principal.organizationId, knowledgeBaseId: kb.id };
    // No model: keywords only. With one, the query is embedded by the same model as the chunks.
    const embedding = kb.embeddingModel === "" ? undefined : await embed(kb.embeddingModel, req.query);
    const found = await searchChunks(index, scope, { query: req.query, embedding, limit: count });
    const entries: QueryEntryRecord[] = found.chunks.map(({ chunk, score }) => ({
      id: chunk.id,
      score,
      ...(includeVectors && chunk.embedding ? { vector: [...chunk.embedding] } : {}),
      artifactJson: chunkArtifactJson(scope, chunk),
    }));
    return { principal, kb, count, mode: found.mode, entries, texts: found.chunks.map(({ chunk }) => chunk.text) };
  }

  return {
    async queryKnowledgeBase(req, ctx) {
      const { principal, kb, count, mode, entries } = await retrieve(ctx, req, req.includeVectors);
      const record: KnowledgeBaseQueryRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        knowledgeBaseId: kb.id,
        query: req.query,
        count,
        includeVectors: req.includeVectors,
        mode,
        entries,
        createdBy: principal.userId,
        createdAt: now(),
      };
      await store.insertQuery(record);
      return { knowledgeBaseQuery: queryMessage(record) };
    },

    async getKnowledgeBaseQuery(req, ctx) {
      const found = await store.getQuery(requirePrincipal(ctx).organizationId, req.knowledgeBaseQueryId);
      if (!found) throw notFound("knowledge base query");
      return { knowledgeBaseQuery: queryMessage(found) };
    },

    async listKnowledgeBaseQueries(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const window = pageWindow(req.page);
      if (!(await store.get(organizationId, req.knowledgeBaseId))) throw notFound("knowledge base");
      const { items, totalCount } = await store.listQueries(
        organizationId,
        req.knowledgeBaseId,
        window.skip,
        window.pageSize,
      );
      return { knowledgeBaseQueries: items.map(queryMessage), page: pageInfo(window, totalCount) };
    },

    async searchKnowledgeBase(req, ctx) {
      const { principal, kb, entries, texts } = await retrieve(ctx, req, false);
      const written = await answer(req.query, texts);
      const record: KnowledgeBaseSearchRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        knowledgeBaseId: kb.id,
        query: req.query,
        result: written.text,
        model: written.model,
        entries,
        createdBy: principal.userId,
        createdAt: now(),
      };
      await store.insertSearch(record);
      return { knowledgeBaseSearch: searchMessage(record) };
    },

    async getKnowledgeBaseSearch(req, ctx) {
      const found = await store.getSearch(requirePrincipal(ctx).organizationId, req.knowledgeBaseSearchId);
      if (!found) throw notFound("knowledge base search");
      return { knowledgeBaseSearch: searchMessage(found) };
    },

    async listKnowledgeBaseSearches(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const window = pageWindow(req.page);
      if (!(await store.get(organizationId, req.knowledgeBaseId))) throw notFound("knowledge base");
      const { items, totalCount } = await store.listSearches(
        organizationId,
        req.knowledgeBaseId,
        window.skip,
        window.pageSize,
      );
      return { knowledgeBaseSearches: items.map(searchMessage), page: pageInfo(window, totalCount) };
    },
  };
}

const entryMessage = (e: QueryEntryRecord): MessageInitShape<typeof QueryEntrySchema> => ({
  id: e.id,
  score: e.score,
  vector: e.vector ?? [],
  hasVector: e.vector !== undefined,
  artifactJson: e.artifactJson,
});

function searchMessage(q: KnowledgeBaseSearchRecord): MessageInitShape<typeof KnowledgeBaseSearchSchema> {
  return {
    knowledgeBaseSearchId: q.id,
    knowledgeBaseId: q.knowledgeBaseId,
    query: q.query,
    result: q.result,
    model: q.model,
    entries: q.entries.map(entryMessage),
    createdBy: q.createdBy,
    createdAt: timestampFromDate(q.createdAt),
  };
}

function queryMessage(q: KnowledgeBaseQueryRecord): MessageInitShape<typeof KnowledgeBaseQuerySchema> {
  return {
    knowledgeBaseQueryId: q.id,
    knowledgeBaseId: q.knowledgeBaseId,
    query: q.query,
    count: q.count,
    includeVectors: q.includeVectors,
    mode: q.mode,
    entries: q.entries.map(entryMessage),
    createdBy: q.createdBy,
    createdAt: timestampFromDate(q.createdAt),
  };
}
