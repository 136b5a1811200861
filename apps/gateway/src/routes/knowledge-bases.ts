import type { KnowledgeBase } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { knowledgeBaseListSchema, knowledgeBaseSchema } from "../schemas.ts";
import { boundedName, boundedText, idArray, pageQuery, uuid } from "../validation.ts";

const ownIndex = "must be gtc_pg_vector: Loom keeps every knowledge base in its own index";

/**
 * What a request may say of the index: only Loom's own kind, `gtc_pg_vector`
 * (docs/decisions.md, "Knowledge bases"). Loom has no default embedding
 * model: a knowledge base names one of EMBEDDING_MODELS, or none.
 */
const configInput = z.strictObject(
  {
    gtc_pg_vector: z
      .object({
        embedding_model: z
          .string()
          .min(1)
          .nullable()
          .optional()
          .meta({ description: "One of EMBEDDING_MODELS (`provider:model`); `null` or absent: keyword search only" }),
        use_default_embedding_model: z
          .literal(false, { error: "Loom has no default embedding model: name one in embedding_model" })
          .optional()
          .meta({ description: "Only false: Loom has no default embedding model" }),
      })
      .optional()
      .meta({ description: "Loom's own index, the only kind" }),
  },
  {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? "the only kind is gtc_pg_vector: Loom keeps every knowledge base in its own index"
        : undefined,
  },
);

const createBody = z.object({
  name: boundedName(200).meta({ description: "The knowledge base's name" }),
  description: boundedText(200).optional().meta({ description: "What it holds, in words" }),
  type: z
    .literal("gtc_pg_vector", { error: ownIndex })
    .optional()
    .meta({ description: "Only gtc_pg_vector: Loom keeps every knowledge base in its own index" }),
  config: configInput.optional().meta({ description: "The index: which model embeds its chunks, if any" }),
  asset_paths: z.array(z.string()).optional().meta({
    description:
      "The files it is made of: `<bucket_id>/<asset name>`, `<bucket_id>/<folder>/` (every asset under it) or `<bucket_id>/` (the bucket)",
  }),
  // Loom's: data connectors of the organization (docs/api.md, Knowledge bases).
  data_connector_ids: idArray.optional().meta({ description: "The data connectors it is fed from too" }),
  // The clients' `embedding_model` names an OpenAI model without its provider; Loom's is in the config.
  embedding_model: z
    .never({ error: "name the model in config.gtc_pg_vector.embedding_model, as provider:model" })
    .optional()
    .meta({ description: "Not taken: name the model in config.gtc_pg_vector.embedding_model" }),
  use_default_embedding_model: z
    .literal(false, { error: "Loom has no default embedding model: name one in config.gtc_pg_vector.embedding_model" })
    .optional()
    .meta({ description: "Only false: Loom has no default embedding model" }),
});

const updateBody = createBody.partial();

/** The model a request names: a name, "" for none (`null`), undefined when it says nothing. */
const embeddingModelOf = (config: z.output<typeof configInput> | undefined): string | undefined => {
  const model = config?.gtc_pg_vector?.embedding_model;
  return model === null ? "" : model;
};

/** A knowledge base in Griptape Cloud's KnowledgeBaseDetail shape (docs/api.md, Knowledge bases). */
export function knowledgeBaseJson(kb: KnowledgeBase | undefined) {
  if (!kb) throw new Error("the knowledge service answered without a knowledge base");
  return {
    knowledge_base_id: kb.knowledgeBaseId,
    organization_id: kb.organizationId,
    name: kb.name,
    description: kb.description,
    type: "gtc_pg_vector" as const,
    config: {
      gtc_pg_vector: {
        embedding_model: kb.embeddingModel === "" ? null : kb.embeddingModel,
        query_schema: null,
        use_default_embedding_model: false as const,
      },
    },
    asset_paths: kb.assetPaths,
    data_connector_ids: kb.dataConnectorIds,
    created_at: isoTime(kb.createdAt),
    created_by: kb.createdBy,
    updated_at: isoTime(kb.updatedAt),
  };
}

export function knowledgeBaseOperations({ knowledgeBases }: ServiceClients) {
  const knowledgeBasePath = z.object({ knowledge_base_id: uuid });
  return [
    defineOperation({
      id: "ListKnowledgeBases",
      method: "GET",
      path: "/knowledge-bases",
      summary: "The organization's knowledge bases, newest first",
      query: pageQuery,
      response: { status: 200, description: "A page of knowledge bases", schema: knowledgeBaseListSchema },
      async handle({ query, call }) {
        const res = await knowledgeBases.listKnowledgeBases(
          { page: { page: query.page, pageSize: query.page_size } },
          call,
        );
        return { knowledge_bases: res.knowledgeBases.map(knowledgeBaseJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "CreateKnowledgeBase",
      method: "POST",
      path: "/knowledge-bases",
      summary:
        "Creates a knowledge base fed from assets of the organization's buckets (by path, or through data connectors), with an embedding model or keyword search only",
      body: { schema: createBody, required: true },
      response: { status: 201, description: "The new knowledge base", schema: knowledgeBaseSchema },
      handle: async ({ body, call }) =>
        knowledgeBaseJson(
          (
            await knowledgeBases.createKnowledgeBase(
              {
                name: body.name,
                description: body.description,
                embeddingModel: embeddingModelOf(body.config),
                assetPaths: body.asset_paths ?? [],
                dataConnectorIds: body.data_connector_ids ?? [],
              },
              call,
            )
          ).knowledgeBase,
        ),
    }),
    defineOperation({
      id: "GetKnowledgeBase",
      method: "GET",
      path: "/knowledge-bases/{knowledge_base_id}",
      summary: "One knowledge base",
      params: knowledgeBasePath,
      response: { status: 200, description: "The knowledge base", schema: knowledgeBaseSchema },
      handle: async ({ params, call }) =>
        knowledgeBaseJson(
          (await knowledgeBases.getKnowledgeBase({ knowledgeBaseId: params.knowledge_base_id }, call)).knowledgeBase,
        ),
    }),
    defineOperation({
      id: "UpdateKnowledgeBase",
      method: "PATCH",
      path: "/knowledge-bases/{knowledge_base_id}",
      summary:
        "Changes the given fields of a knowledge base; `asset_paths` or `data_connector_ids` sent replace the stored ones, an embedding model sent replaces the stored one (`null`: none)",
      params: knowledgeBasePath,
      body: { schema: updateBody, required: false },
      response: { status: 200, description: "The knowledge base as it is now", schema: knowledgeBaseSchema },
      handle: async ({ params, body, call }) =>
        knowledgeBaseJson(
          (
            await knowledgeBases.updateKnowledgeBase(
              {
                knowledgeBaseId: params.knowledge_base_id,
                name: body?.name,
                description: body?.description,
                embeddingModel: embeddingModelOf(body?.config),
                assetPaths: body?.asset_paths && { values: body.asset_paths },
                dataConnectorIds: body?.data_connector_ids && { values: body.data_connector_ids },
              },
              call,
            )
          ).knowledgeBase,
        ),
    }),
    defineOperation({
      id: "DeleteKnowledgeBase",
      method: "DELETE",
      path: "/knowledge-bases/{knowledge_base_id}",
      summary: "Deletes a knowledge base",
      params: knowledgeBasePath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) =>
        void (await knowledgeBases.deleteKnowledgeBase({ knowledgeBaseId: params.knowledge_base_id }, call)),
    }),
  ];
}
