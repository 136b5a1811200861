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
} from "@loom/proto/knowledge/v1/knowledge_base_queries_pb";
import { requirePrincipal } from "@loom/server/principal";
import type { ChunkIndex } from "../index/port.ts";
import { searchChunks } from "../index/search.ts";
import type { KnowledgeBasesStore } from "../store/port.ts";
import type { KnowledgeBaseQueryRecord } from "../store/queries.ts";
import { chunkArtifactJson } from "./artifact.ts";
import type { EmbedText } from "./embed-query.ts";

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
  now: () => Date;
}

/** KnowledgeBaseQueriesService: a knowledge base's chunks searched, and each query kept (docs/decisions.md, "Querying knowledge bases"). */
export function createQueriesHandlers({
  store,
  index,
  embed,
  now,
}: QueriesDeps): ServiceImpl<typeof KnowledgeBaseQueriesService> {
  return {
    async queryKnowledgeBase(req, ctx) {
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
      const record: KnowledgeBaseQueryRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        knowledgeBaseId: kb.id,
        query: req.query,
        count,
        includeVectors: req.includeVectors,
        mode: found.mode,
        entries: found.chunks.map(({ chunk, score }) => ({
          id: chunk.id,
          score,
          ...(req.includeVectors && chunk.embedding ? { vector: [...chunk.embedding] } : {}),
          artifactJson: chunkArtifactJson(scope, chunk),
        })),
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
    entries: q.entries.map((e) => ({
      id: e.id,
      score: e.score,
      vector: e.vector ?? [],
      hasVector: e.vector !== undefined,
      artifactJson: e.artifactJson,
    })),
    createdBy: q.createdBy,
    createdAt: timestampFromDate(q.createdAt),
  };
}
