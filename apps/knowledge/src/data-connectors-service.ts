import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client, ServiceImpl } from "@connectrpc/connect";
import { invalidArgument, notFound, type Violation } from "@loom/contracts/errors";
import { isUuid, newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { checkText, nameProblem } from "@loom/contracts/text";
import type { DataConnectorSchema, DataConnectorsService } from "@loom/proto/knowledge/v1/data_connectors_pb";
import type { StorageService } from "@loom/proto/storage/v1/storage_pb";
import { requirePrincipal } from "@loom/server/principal";
import { checkBucketSource } from "./asset-paths.ts";
import type { DataConnectorPatch, DataConnectorRecord } from "./store/data-connectors.ts";
import type { KnowledgeBasesStore } from "./store/port.ts";

/** Where a connector's bucket and paths are in the public JSON (docs/api.md, Data connectors). */
const sourceAt = { bucketId: "body.config.data_lake.bucket_id", assetPaths: "body.config.data_lake.asset_paths" };

/**
 * A knowledge base's `data_connector_ids`: each a connector of the
 * organization, each once; a violation at `path[i]` otherwise. Ids in lower
 * case, as stored.
 */
export async function checkDataConnectorIds(
  violations: Violation[],
  path: string,
  ids: readonly string[],
  store: KnowledgeBasesStore,
  organizationId: string,
): Promise<string[]> {
  const lower = ids.map((id) => id.toLowerCase());
  const existing = await store.existingDataConnectorIds(organizationId, lower.filter(isUuid));
  lower.forEach((id, i) => {
    if (!existing.has(id))
      violations.push({ path: `${path}[${i}]`, message: `${id} names no data connector of the organization` });
    else if (lower.indexOf(id) !== i) violations.push({ path: `${path}[${i}]`, message: `${id} is named twice` });
  });
  return lower;
}

/** The DataConnectorsService handlers, on the knowledge store's connectors part. */
export function createDataConnectorsHandlers(deps: {
  store: KnowledgeBasesStore;
  storage: Client<typeof StorageService>;
  now: () => Date;
}): ServiceImpl<typeof DataConnectorsService> {
  const { store, storage, now } = deps;

  return {
    async createDataConnector(req, ctx) {
      const principal = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      checkText(violations, "body.description", req.description, 200);
      await checkBucketSource(violations, sourceAt, req, storage, principal);
      if (violations.length > 0) throw invalidArgument(violations);
      const at = now();
      const connector: DataConnectorRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        name: req.name,
        description: req.description ?? "",
        bucketId: req.bucketId.toLowerCase(),
        assetPaths: req.assetPaths,
        createdBy: principal.userId,
        createdAt: at,
        updatedAt: at,
      };
      await store.insertDataConnector(connector);
      return { dataConnector: connectorMessage(connector) };
    },

    async getDataConnector(req, ctx) {
      const found = await store.getDataConnector(requirePrincipal(ctx).organizationId, req.dataConnectorId);
      if (!found) throw notFound("data connector");
      return { dataConnector: connectorMessage(found) };
    },

    async updateDataConnector(req, ctx) {
      const principal = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      checkText(violations, "body.description", req.description, 200);
      const assetPaths = req.assetPaths?.values;
      await checkBucketSource(violations, sourceAt, { bucketId: req.bucketId, assetPaths }, storage, principal);
      if (violations.length > 0) throw invalidArgument(violations);
      const patch: DataConnectorPatch = {
        name: req.name,
        description: req.description,
        bucketId: req.bucketId?.toLowerCase(),
        assetPaths,
      };
      const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as DataConnectorPatch;
      const updated =
        Object.keys(given).length === 0
          ? await store.getDataConnector(principal.organizationId, req.dataConnectorId)
          : await store.updateDataConnector(principal.organizationId, req.dataConnectorId, given, now());
      if (!updated) throw notFound("data connector");
      return { dataConnector: connectorMessage(updated) };
    },

    async deleteDataConnector(req, ctx) {
      if (!(await store.deleteDataConnector(requirePrincipal(ctx).organizationId, req.dataConnectorId, now())))
        throw notFound("data connector");
      return {};
    },

    async listDataConnectors(req, ctx) {
      const window = pageWindow(req.page);
      const { items, totalCount } = await store.listDataConnectors(
        requirePrincipal(ctx).organizationId,
        window.skip,
        window.pageSize,
      );
      return { dataConnectors: items.map(connectorMessage), page: pageInfo(window, totalCount) };
    },
  };
}

function connectorMessage(c: DataConnectorRecord): MessageInitShape<typeof DataConnectorSchema> {
  return {
    dataConnectorId: c.id,
    organizationId: c.organizationId,
    name: c.name,
    description: c.description,
    bucketId: c.bucketId,
    assetPaths: c.assetPaths,
    createdBy: c.createdBy,
    createdAt: timestampFromDate(c.createdAt),
    updatedAt: timestampFromDate(c.updatedAt),
  };
}
