import { useEffect, useState } from "preact/hooks";
import { messageOf } from "../api/request.ts";
import { type Bucket, listBuckets } from "../files/api.ts";

/**
 * The buckets a knowledge base's files are picked from and named by: the
 * first page, at the API's largest page size (100), or what went wrong.
 */
export function useBuckets(apiKey: string) {
  const [buckets, setBuckets] = useState<Bucket[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    listBuckets(apiKey, 1, 100).then(
      (page) => setBuckets(page.buckets),
      (e) => setError(messageOf(e)),
    );
  }, [apiKey]);
  return { buckets, error };
}

/** An asset path as a person reads it: the bucket's name (when known) in place of its id. */
export function readablePath(path: string, buckets: Bucket[] | null): string {
  const slash = path.indexOf("/");
  const bucket = buckets?.find((b) => b.bucket_id === path.slice(0, slash));
  return bucket ? `${bucket.name}${path.slice(slash)}` : path;
}
