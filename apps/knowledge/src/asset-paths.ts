import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { assetNameProblem } from "@loom/contracts/asset-names";
import type { Violation } from "@loom/contracts/errors";
import { isUuid } from "@loom/contracts/ids";
import type { StorageService } from "@loom/proto/storage/v1/storage_pb";
import { headersFor, type Principal } from "@loom/server/principal";

/** How many paths one knowledge base may name (docs/decisions.md, "Knowledge bases"). */
export const maxAssetPaths = 100;

const shape = 'must be "<bucket_id>/<asset name>", "<bucket_id>/<folder>/" or "<bucket_id>/"';

/**
 * One path as stored: the bucket's id in lower case (as ids are stored), then
 * an asset's name, a folder ending in `/`, or nothing (the whole bucket).
 * Undefined when it is malformed.
 */
function normalized(entry: string): { bucketId: string; path: string } | undefined {
  const slash = entry.indexOf("/");
  const bucketId = entry.slice(0, slash);
  if (slash < 0 || !isUuid(bucketId)) return undefined;
  const inBucket = entry.slice(slash + 1);
  const name = inBucket.endsWith("/") ? inBucket.slice(0, -1) : inBucket;
  if (inBucket !== "" && assetNameProblem(name) !== undefined) return undefined;
  return { bucketId: bucketId.toLowerCase(), path: `${bucketId.toLowerCase()}/${inBucket}` };
}

/**
 * A knowledge base's `asset_paths`, as they will be stored: each well-formed,
 * named once, at most `maxAssetPaths`, and in a bucket of the principal's
 * organization, which only the storage service can say (its GetBucket, as the
 * principal: another organization's bucket is NOT_FOUND there too). Each
 * problem is a violation at `path[i]`; the buckets are asked only once the
 * shapes are right, each once.
 */
export async function checkAssetPaths(
  violations: Violation[],
  path: string,
  entries: readonly string[],
  storage: Client<typeof StorageService>,
  principal: Principal,
): Promise<string[]> {
  if (entries.length > maxAssetPaths) {
    violations.push({ path, message: `must hold at most ${maxAssetPaths} paths` });
    return [];
  }
  const parsed = entries.map(normalized);
  const kept: string[] = [];
  const before = violations.length;
  parsed.forEach((entry, i) => {
    if (!entry) violations.push({ path: `${path}[${i}]`, message: shape });
    else if (kept.includes(entry.path)) violations.push({ path: `${path}[${i}]`, message: "is named twice" });
    kept.push(entry?.path ?? "");
  });
  if (violations.length > before) return kept;
  const buckets = [...new Set(parsed.map((entry) => entry!.bucketId))];
  const missing = new Set<string>();
  await Promise.all(
    buckets.map(async (bucketId) => {
      if (!(await bucketExists(storage, principal, bucketId))) missing.add(bucketId);
    }),
  );
  parsed.forEach((entry, i) => {
    if (missing.has(entry!.bucketId))
      violations.push({ path: `${path}[${i}]`, message: "names no bucket of the organization" });
  });
  return kept;
}

async function bucketExists(
  storage: Client<typeof StorageService>,
  principal: Principal,
  bucketId: string,
): Promise<boolean> {
  try {
    await storage.getBucket({ bucketId }, { headers: headersFor(principal) });
    return true;
  } catch (error) {
    if (ConnectError.from(error).code === Code.NotFound) return false;
    throw error;
  }
}
