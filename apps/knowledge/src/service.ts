import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client, ServiceImpl } from "@connectrpc/connect";
import { invalidArgument, notFound, type Violation } from "@loom/contracts/errors";
import { isUuid, newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { checkText, nameProblem } from "@loom/contracts/text";
import { DataConnectorsService } from "@loom/proto/knowledge/v1/data_connectors_pb";
import { KnowledgeBaseJobsService } from "@loom/proto/knowledge/v1/knowledge_base_jobs_pb";
import { KnowledgeBaseQueriesService } from "@loom/proto/knowledge/v1/knowledge_base_queries_pb";
import { type KnowledgeBaseSchema, KnowledgeBasesService } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import type { StorageService } from "@loom/proto/storage/v1/storage_pb";
import { requirePrincipal } from "@loom/server/principal";
import { type RpcService, storeBackedService } from "@loom/server/rpc-service";
import { checkAssetPaths } from "./asset-paths.ts";
import { checkDataConnectorIds, createDataConnectorsHandlers } from "./data-connectors-service.ts";
import type { ChunkIndex } from "./index/port.ts";
import type { IngestLimits } from "./ingest/limits.ts";
import { createJobsHandlers } from "./jobs-service.ts";
import type { EmbedText } from "./query/embed-query.ts";
import { createQueriesHandlers } from "./query/queries-service.ts";
import type { AnswerFromChunks } from "./query/search-model.ts";
import type { KnowledgeBasePatch, KnowledgeBaseRecord, KnowledgeBasesStore } from "./store/port.ts";

export interface KnowledgeDeps {
  store: KnowledgeBasesStore;
  /** The storage service, asked whether the buckets a knowledge base names are the organization's. */
  storage: Client<typeof StorageService>;
  /** The embedding models a knowledge base may pick (EMBEDDING_MODELS). */
  embeddingModels: readonly string[];
  /** The chunks of every knowledge base: searched by queries; a deleted knowledge base's chunks leave it. */
  index: ChunkIndex;
  /** The ingest's limits: a job past them is refused at its create. */
  limits: IngestLimits;
  /** Tells the ingest worker a job is queued. */
  jobQueued: () => void;
  /** Embeds a query with a knowledge base's model. */
  embed: EmbedText;
  /** Writes a search's answer from the chunks found. */
  answer: AnswerFromChunks;
  now?: () => Date;
}

/** Where a knowledge base's embedding model is in the public JSON (docs/api.md, Knowledge bases). */
const embeddingModelPath = "body.config.gtc_pg_vector.embedding_model";

/** The knowledge service: knowledge bases (KnowledgeBasesService) and the data connectors they name (DataConnectorsService), one store. */
export function createKnowledgeService(deps: KnowledgeDeps): RpcService {
  const { store, storage, embeddingModels, index } = deps;
  const now = deps.now ?? (() => new Date());

  /** The model as given, when it is "" (none) or a configured one; a violation otherwise. */
  function checkEmbeddingModel(violations: Violation[], model: string | undefined): void {
    if (model === undefined || model === "" || embeddingModels.includes(model)) return;
    violations.push({
      path: embeddingModelPath,
      message:
        embeddingModels.length === 0
          ? "no embedding model is configured (EMBEDDING_MODELS): leave it out for keyword search"
          : `must be one of the configured embedding models: ${embeddingModels.join(", ")}`,
    });
  }

  const impl: ServiceImpl<typeof KnowledgeBasesService> = {
    async createKnowledgeBase(req, ctx) {
      const principal = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      checkText(violations, "body.description", req.description, 200);
      checkEmbeddingModel(violations, req.embeddingModel);
      const assetPaths = await checkAssetPaths(violations, "body.asset_paths", req.assetPaths, storage, principal);
      const dataConnectorIds = await checkDataConnectorIds(
        violations,
        "body.data_connector_ids",
        req.dataConnectorIds,
        store,
        principal.organizationId,
      );
      if (violations.length > 0) throw invalidArgument(violations);
      const at = now();
      const kb: KnowledgeBaseRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        name: req.name,
        description: req.description ?? "",
        embeddingModel: req.embeddingModel ?? "",
        assetPaths,
        dataConnectorIds,
        createdBy: principal.userId,
        createdAt: at,
        updatedAt: at,
      };
      await store.insert(kb);
      return { knowledgeBase: knowledgeBaseMessage(kb) };
    },

    async getKnowledgeBase(req, ctx) {
      const found = await store.get(requirePrincipal(ctx).organizationId, req.knowledgeBaseId);
      if (!found) throw notFound("knowledge base");
      return { knowledgeBase: knowledgeBaseMessage(found) };
    },

    async updateKnowledgeBase(req, ctx) {
      const principal = requirePrincipal(ctx);
      const { organizationId } = principal;
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      checkText(violations, "body.description", req.description, 200);
      checkEmbeddingModel(violations, req.embeddingModel);
      const patch: KnowledgeBasePatch = {
        name: req.name,
        description: req.description,
        // A changed model makes the stored vectors another model's: the ingest slice re-embeds (docs/decisions.md).
        embeddingModel: req.embeddingModel,
        assetPaths:
          req.assetPaths &&
          (await checkAssetPaths(violations, "body.asset_paths", req.assetPaths.values, storage, principal)),
        dataConnectorIds:
          req.dataConnectorIds &&
          (await checkDataConnectorIds(
            violations,
            "body.data_connector_ids",
            req.dataConnectorIds.values,
            store,
            organizationId,
          )),
      };
      if (violations.length > 0) throw invalidArgument(violations);
      const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as KnowledgeBasePatch;
      const updated =
        Object.keys(given).length === 0
          ? await store.get(organizationId, req.knowledgeBaseId)
          : await store.update(organizationId, req.knowledgeBaseId, given, now());
      if (!updated) throw notFound("knowledge base");
      return { knowledgeBase: knowledgeBaseMessage(updated) };
    },

    async deleteKnowledgeBase(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const knowledgeBaseId = req.knowledgeBaseId.toLowerCase();
      if (!(await store.get(organizationId, knowledgeBaseId))) throw notFound("knowledge base");
      // Its kept queries and searches (they quote its chunks) go first: a stop in between leaves the knowledge base
      // without them, never them readable without it.
      await store.deleteQueriesOf(organizationId, knowledgeBaseId);
      if (!(await store.delete(organizationId, knowledgeBaseId))) throw notFound("knowledge base");
      // After the record, so a stop in between leaves only what no query reaches (docs/decisions.md, "Ingest
      // jobs"): its jobs (a running one sees its job gone at its next check and stops), then its chunks.
      await store.deleteJobsOf(organizationId, knowledgeBaseId);
      await index.removeKnowledgeBase({ organizationId, knowledgeBaseId });
      return {};
    },

    async listKnowledgeBases(req, ctx) {
      const window = pageWindow(req.page);
      const { items, totalCount } = await store.list(
        requirePrincipal(ctx).organizationId,
        window.skip,
        window.pageSize,
      );
      return { knowledgeBases: items.map(knowledgeBaseMessage), page: pageInfo(window, totalCount) };
    },

    async resolveKnowledgeBases(req, ctx) {
      const asked = req.knowledgeBaseIds.map((id) => id.toLowerCase());
      const found = new Map(
        (await store.getMany(requirePrincipal(ctx).organizationId, asked.filter(isUuid))).map((kb) => [kb.id, kb]),
      );
      return {
        knowledgeBases: asked.flatMap((id) => {
          const kb = found.get(id);
          return kb ? [knowledgeBaseMessage(kb)] : [];
        }),
        missingIds: req.knowledgeBaseIds.filter((_, i) => !found.has(asked[i]!)),
      };
    },
  };

  // Data connectors are the knowledge service's too: they live beside the knowledge bases that name them.
  const dataConnectors = createDataConnectorsHandlers({ store, storage, now });
  const jobs = createJobsHandlers({
    store,
    index,
    storage,
    limits: deps.limits,
    queued: deps.jobQueued,
    now,
  });
  const queries = createQueriesHandlers({ store, index: deps.index, embed: deps.embed, answer: deps.answer, now });
  return storeBackedService(
    "knowledge",
    (router) => {
      router.service(KnowledgeBasesService, impl);
      router.service(DataConnectorsService, dataConnectors);
      router.service(KnowledgeBaseJobsService, jobs);
      router.service(KnowledgeBaseQueriesService, queries);
    },
    // Ready while both the records and the index answer; closing closes both.
    {
      ready: async () => (await store.ready()) && (await deps.index.ready()),
      close: async () => {
        await deps.index.close();
        await store.close();
      },
    },
  );
}

function knowledgeBaseMessage(kb: KnowledgeBaseRecord): MessageInitShape<typeof KnowledgeBaseSchema> {
  return {
    knowledgeBaseId: kb.id,
    organizationId: kb.organizationId,
    name: kb.name,
    description: kb.description,
    embeddingModel: kb.embeddingModel,
    assetPaths: kb.assetPaths,
    dataConnectorIds: kb.dataConnectorIds,
    createdBy: kb.createdBy,
    createdAt: timestampFromDate(kb.createdAt),
    updatedAt: timestampFromDate(kb.updatedAt),
  };
}
