import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { assetNameProblem } from "@loom/contracts/asset-names";
import type { Violation } from "@loom/contracts/errors";
import { isUuid } from "@loom/contracts/ids";
import type { StorageService } from "@loom/proto/storage/v1/storage_pb";
import { headersFor, type Principal } from "@loom/server/principal";

/** How many paths one knowledge base, or one data connector, may name (docs/decisions.md, "Knowledge bases"). */
export const maxAssetPaths = 100;

const inBucketShape = 'must be an asset name or a folder ending in "/"';
const qualifiedShape = 'must be "<bucket_id>/<asset name>", "<bucket_id>/<folder>/" or "<bucket_id>/"';
const foreignBucket = "names no bucket of the organization";

/** A path inside a bucket: an asset's name (docs/behaviour.md §7), or a folder, the same ending in `/`. */
function isInBucketPath(path: string): boolean {
  return assetNameProblem(path.endsWith("/") ? path.slice(0, -1) : path) === undefined;
}

/** `<bucket_id>/<path in it, or nothing>` as stored (the id in lower case, as ids are), or undefined when malformed. */
function qualified(entry: string): { bucketId: string; path: string } | undefined {
  const slash = entry.indexOf("/");
  const bucketId = entry.slice(0, slash).toLowerCase();
  const inBucket = entry.slice(slash + 1);
  if (slash < 0 || !isUuid(bucketId) || (inBucket !== "" && !isInBucketPath(inBucket))) return undefined;
  return { bucketId, path: `${bucketId}/${inBucket}` };
}

/**
 * A list of paths, each checked by `parse` and named once, at most
 * `maxAssetPaths`: a violation at `path[i]` for each problem. Returns the
 * parsed entries (undefined where malformed) and whether any was wrong.
 */
function checkList<T extends { path: string }>(
  violations: Violation[],
  path: string,
  entries: readonly string[],
  parse: (entry: string) => T | undefined,
  shape: string,
): { parsed: (T | undefined)[]; wrong: boolean } {
  if (entries.length > maxAssetPaths) {
    violations.push({ path, message: `must hold at most ${maxAssetPaths} paths` });
    return { parsed: [], wrong: true };
  }
  const before = violations.length;
  const parsed = entries.map(parse);
  const seen = new Set<string>();
  parsed.forEach((entry, i) => {
    if (!entry) violations.push({ path: `${path}[${i}]`, message: shape });
    else if (seen.has(entry.path)) violations.push({ path: `${path}[${i}]`, message: "is named twice" });
    else seen.add(entry.path);
  });
  return { parsed, wrong: violations.length > before };
}

/**
 * The buckets among `bucketIds` that are not the principal's organization's:
 * only the storage service can say (its GetBucket, as the principal: another
 * organization's bucket is NOT_FOUND there too). Each asked once.
 */
async function foreignBuckets(
  storage: Client<typeof StorageService>,
  principal: Principal,
  bucketIds: Iterable<string>,
): Promise<Set<string>> {
  const foreign = new Set<string>();
  await Promise.all(
    [...new Set(bucketIds)].map(async (bucketId) => {
      try {
        await storage.getBucket({ bucketId }, { headers: headersFor(principal) });
      } catch (error) {
        if (ConnectError.from(error).code !== Code.NotFound) throw error;
        foreign.add(bucketId);
      }
    }),
  );
  return foreign;
}

/**
 * A knowledge base's `asset_paths` as they will be stored: each
 * `<bucket_id>/<asset name>`, `<bucket_id>/<folder>/` or `<bucket_id>/`,
 * named once, in a bucket of the organization (asked once the shapes are right).
 */
export async function checkAssetPaths(
  violations: Violation[],
  path: string,
  entries: readonly string[],
  storage: Client<typeof StorageService>,
  principal: Principal,
): Promise<string[]> {
  const { parsed, wrong } = checkList(violations, path, entries, qualified, qualifiedShape);
  if (wrong) return [];
  const kept = parsed.map((entry) => entry!);
  const foreign = await foreignBuckets(
    storage,
    principal,
    kept.map((entry) => entry.bucketId),
  );
  kept.forEach((entry, i) => {
    if (foreign.has(entry.bucketId)) violations.push({ path: `${path}[${i}]`, message: foreignBucket });
  });
  return kept.map((entry) => entry.path);
}

/**
 * A data connector's bucket and the paths in it (Griptape Cloud's `data_lake`
 * shape): the bucket the organization's, each path an asset name or a folder,
 * named once. `at` is the public path of the bucket's field, `pathsAt` of the list.
 */
export async function checkBucketSource(
  violations: Violation[],
  at: { bucketId: string; assetPaths: string },
  source: { bucketId?: string | undefined; assetPaths?: readonly string[] | undefined },
  storage: Client<typeof StorageService>,
  principal: Principal,
): Promise<void> {
  if (source.assetPaths)
    checkList(
      violations,
      at.assetPaths,
      source.assetPaths,
      (entry) => (isInBucketPath(entry) ? { path: entry } : undefined),
      inBucketShape,
    );
  if (source.bucketId === undefined) return;
  if (!isUuid(source.bucketId)) violations.push({ path: at.bucketId, message: "must be a uuid" });
  else if ((await foreignBuckets(storage, principal, [source.bucketId])).size > 0)
    violations.push({ path: at.bucketId, message: foreignBucket });
}
