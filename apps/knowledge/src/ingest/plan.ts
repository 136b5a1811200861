import type { Client } from "@connectrpc/connect";
import type { StorageService } from "@loom/proto/storage/v1/storage_pb";
import type { Principal } from "@loom/server/principal";
import type { ChunkIndex, IndexedAsset, KnowledgeScope } from "../index/port.ts";
import type { JobFileError } from "../store/jobs.ts";
import type { KnowledgeBaseRecord, KnowledgeBasesStore } from "../store/port.ts";
import { listSourceAssets, type SourceAsset, sourcePaths } from "./sources.ts";

/** A file a job reads: new to the index, or changed since it was indexed. */
export interface FileToRead {
  /** `bucket/name`, as the job's errors name it. */
  key: string;
  asset: SourceAsset;
  /** The version the index will hold once it is read. */
  version: string;
  /** What the index holds of it now (its old chunks, given back when it is replaced). */
  before: IndexedAsset | undefined;
}

/** What an ingest of a knowledge base has to do, from its sources as storage lists them and its index now. */
export interface IngestPlan {
  /** The index holds another model's vectors (or none where it now has one): it starts again, every file is read. */
  restart: boolean;
  /** Indexed files its sources no longer name: removed. */
  gone: IndexedAsset[];
  /** Files to read, in name order. */
  toRead: FileToRead[];
}

export interface PlanDeps {
  store: KnowledgeBasesStore;
  index: ChunkIndex;
  storage: Client<typeof StorageService>;
}

/**
 * The plan of an ingest of `kb` now, listing its sources as `principal` (the job's creator): made by a job as it
 * starts and by the job's create to refuse, before writing it, a job past the limits (docs/decisions.md,
 * "Ingest jobs"). A data connector or bucket that is gone goes in `errors`; storage not answering is a JobFailure.
 */
export async function planIngest(
  { store, index, storage }: PlanDeps,
  kb: KnowledgeBaseRecord,
  principal: Principal,
  errors: JobFileError[],
): Promise<IngestPlan> {
  const scope: KnowledgeScope = { organizationId: kb.organizationId, knowledgeBaseId: kb.id };
  const connectors = [];
  for (const id of kb.dataConnectorIds) {
    const connector = await store.getDataConnector(kb.organizationId, id);
    if (connector) connectors.push(connector);
    else errors.push({ path: id, type: "not_found", message: `data connector ${id} no longer exists` });
  }
  const assets = await listSourceAssets(storage, principal, sourcePaths(kb, connectors), errors);
  // A chunk's vectors are its model's: the model is part of an asset's version.
  const modelSuffix = `|${kb.embeddingModel}`;
  let indexed = await index.indexedAssets(scope);
  // Another model's vectors (or none, or another dimension, which one knowledge base's index cannot hold beside them).
  const restart = indexed.some((a) => !a.version.endsWith(modelSuffix));
  if (restart) indexed = [];
  const gone = indexed.filter((old) => !assets.has(`${old.bucketId}/${old.path}`));
  const indexedByKey = new Map(indexed.map((a) => [`${a.bucketId}/${a.path}`, a]));
  const toRead: FileToRead[] = [];
  for (const [key, asset] of [...assets].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const before = indexedByKey.get(key);
    const version = `${asset.version}${modelSuffix}`;
    if (before?.version !== version) toRead.push({ key, asset, version, before });
  }
  return { restart, gone, toRead };
}
