import type { DataConnector } from "@loom/proto/knowledge/v1/data_connectors_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { dataConnectorListSchema, dataConnectorSchema } from "../schemas.ts";
import { boundedName, boundedText, pageQuery, uuid } from "../validation.ts";

const ownBuckets = "Loom reads only its own buckets";

/** The one kind Loom serves: Griptape Cloud's `data_lake`, a bucket of the organization (docs/decisions.md, "Knowledge bases"). */
const configInput = z.strictObject(
  {
    data_lake: z
      .object({
        bucket_id: uuid.meta({ description: "The bucket of the organization it reads" }),
        asset_paths: z.array(z.string()).optional().meta({
          description: 'Asset names and folders (ending in "/") in the bucket; absent or empty: the whole bucket',
        }),
      })
      .meta({ description: "A bucket of the organization, the only kind" }),
  },
  {
    error: (issue) => (issue.code === "unrecognized_keys" ? `the only kind is data_lake: ${ownBuckets}` : undefined),
  },
);

const createBody = z.object({
  name: boundedName(200).meta({ description: "The data connector's name" }),
  description: boundedText(200).optional().meta({ description: "What it reads, in words" }),
  type: z
    .literal("data_lake", { error: `must be data_lake: ${ownBuckets}` })
    .optional()
    .meta({ description: "Only data_lake: a bucket of the organization" }),
  config: configInput.meta({ description: "Which bucket, and which of its files" }),
});

const updateBody = createBody.partial();

/** A connector in Griptape Cloud's DataConnectorDetail shape (docs/api.md, Data connectors). */
export function dataConnectorJson(c: DataConnector | undefined) {
  if (!c) throw new Error("the knowledge service answered without a data connector");
  return {
    data_connector_id: c.dataConnectorId,
    organization_id: c.organizationId,
    name: c.name,
    description: c.description,
    type: "data_lake" as const,
    config: { data_lake: { bucket_id: c.bucketId, asset_paths: c.assetPaths } },
    created_at: isoTime(c.createdAt),
    created_by: c.createdBy,
    updated_at: isoTime(c.updatedAt),
  };
}

export function dataConnectorOperations({ dataConnectors }: ServiceClients) {
  const connectorPath = z.object({ data_connector_id: uuid });
  return [
    defineOperation({
      id: "ListDataConnectors",
      method: "GET",
      path: "/data-connectors",
      summary: "The organization's data connectors, newest first",
      query: pageQuery,
      response: { status: 200, description: "A page of data connectors", schema: dataConnectorListSchema },
      async handle({ query, call }) {
        const res = await dataConnectors.listDataConnectors(
          { page: { page: query.page, pageSize: query.page_size } },
          call,
        );
        return { data_connectors: res.dataConnectors.map(dataConnectorJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "CreateDataConnector",
      method: "POST",
      path: "/data-connectors",
      summary:
        "Creates a data connector of kind data_lake: a bucket of the organization, or asset names and folders in it",
      body: { schema: createBody, required: true },
      response: { status: 201, description: "The new data connector", schema: dataConnectorSchema },
      handle: async ({ body, call }) =>
        dataConnectorJson(
          (
            await dataConnectors.createDataConnector(
              {
                name: body.name,
                description: body.description,
                bucketId: body.config.data_lake.bucket_id,
                assetPaths: body.config.data_lake.asset_paths ?? [],
              },
              call,
            )
          ).dataConnector,
        ),
    }),
    defineOperation({
      id: "GetDataConnector",
      method: "GET",
      path: "/data-connectors/{data_connector_id}",
      summary: "One data connector",
      params: connectorPath,
      response: { status: 200, description: "The data connector", schema: dataConnectorSchema },
      handle: async ({ params, call }) =>
        dataConnectorJson(
          (await dataConnectors.getDataConnector({ dataConnectorId: params.data_connector_id }, call)).dataConnector,
        ),
    }),
    defineOperation({
      id: "UpdateDataConnector",
      method: "PATCH",
      path: "/data-connectors/{data_connector_id}",
      summary:
        "Changes the given fields of a data connector; a config sent sets its bucket, and its `asset_paths` when sent",
      params: connectorPath,
      body: { schema: updateBody, required: false },
      response: { status: 200, description: "The data connector as it is now", schema: dataConnectorSchema },
      handle: async ({ params, body, call }) => {
        const source = body?.config?.data_lake;
        return dataConnectorJson(
          (
            await dataConnectors.updateDataConnector(
              {
                dataConnectorId: params.data_connector_id,
                name: body?.name,
                description: body?.description,
                bucketId: source?.bucket_id,
                assetPaths: source?.asset_paths && { values: source.asset_paths },
              },
              call,
            )
          ).dataConnector,
        );
      },
    }),
    defineOperation({
      id: "DeleteDataConnector",
      method: "DELETE",
      path: "/data-connectors/{data_connector_id}",
      summary: "Deletes a data connector; the knowledge bases naming it no longer do",
      params: connectorPath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) =>
        void (await dataConnectors.deleteDataConnector({ dataConnectorId: params.data_connector_id }, call)),
    }),
  ];
}
