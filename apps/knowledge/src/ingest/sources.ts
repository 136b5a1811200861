import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { Asset, StorageService } from "@loom/proto/storage/v1/storage_pb";
import { headersFor, type Principal } from "@loom/server/principal";
import type { JobFileError } from "../store/jobs.ts";
import type { KnowledgeBaseRecord } from "../store/port.ts";
import { withStorageRetries } from "./retry.ts";

/** An asset a knowledge base is fed from, as storage lists it. */
export interface SourceAsset {
  bucketId: string;
  /** Its name in the bucket: the index's asset path. */
  name: string;
  size: number;
  contentType?: string;
  /**
   * What changes when its bytes do: the size and the time of the last upload (storage keeps no content hash;
   * every upload moves `updated_at`).
   */
  version: string;
}

/** One place to look: a bucket and an asset name, a folder (ends in `/`), or the whole bucket (""). */
export interface SourcePath {
  bucketId: string;
  path: string;
}

/** The places a knowledge base names: its `asset_paths` and its data connectors' buckets and paths. */
export function sourcePaths(
  kb: KnowledgeBaseRecord,
  connectors: { bucketId: string; assetPaths: string[] }[],
): SourcePath[] {
  const fromKb = kb.assetPaths.map((entry) => {
    const slash = entry.indexOf("/");
    return { bucketId: entry.slice(0, slash), path: entry.slice(slash + 1) };
  });
  const fromConnectors = connectors.flatMap((c) =>
    c.assetPaths.length === 0
      ? [{ bucketId: c.bucketId, path: "" }]
      : c.assetPaths.map((path) => ({ bucketId: c.bucketId, path })),
  );
  return [...fromKb, ...fromConnectors];
}

const pageSize = 100;

const versionOf = (asset: Asset): string =>
  `${asset.size ?? 0}@${asset.updatedAt ? Number(asset.updatedAt.seconds) * 1000 + Math.floor(asset.updatedAt.nanos / 1e6) : 0}`;

/**
 * Every asset the paths name, once each, through storage's ListAssets as the job's creator (the only door to the
 * files): a folder or a bucket by prefix, an asset by its exact name. Assets never uploaded (no size) are left out.
 * A bucket that is gone (NOT_FOUND) lists nothing and is reported in `errors`: its files leave the index.
 */
export async function listSourceAssets(
  storage: Client<typeof StorageService>,
  principal: Principal,
  paths: readonly SourcePath[],
  errors: JobFileError[],
): Promise<Map<string, SourceAsset>> {
  const found = new Map<string, SourceAsset>();
  const headers = headersFor(principal);
  const goneBuckets = new Set<string>();
  for (const { bucketId, path } of paths) {
    if (goneBuckets.has(bucketId)) continue;
    const exact = path !== "" && !path.endsWith("/");
    for (let page = 1; ; page++) {
      let answer: Awaited<ReturnType<typeof storage.listAssets>>;
      try {
        answer = await withStorageRetries(`listing the assets of bucket ${bucketId}`, () =>
          storage.listAssets({ bucketId, prefix: path, page: { page, pageSize } }, { headers }),
        );
      } catch (error) {
        if (error instanceof ConnectError && error.code === Code.NotFound) {
          goneBuckets.add(bucketId);
          errors.push({ path: `${bucketId}/`, type: "not_found", message: `bucket ${bucketId} no longer exists` });
          break;
        }
        throw error;
      }
      for (const asset of answer.assets) {
        if (asset.size === undefined || (exact && asset.name !== path)) continue;
        found.set(`${bucketId}/${asset.name}`, {
          bucketId,
          name: asset.name,
          size: Number(asset.size),
          ...(asset.contentType !== undefined && { contentType: asset.contentType }),
          version: versionOf(asset),
        });
      }
      if (answer.assets.length < pageSize) break;
    }
  }
  return found;
}
