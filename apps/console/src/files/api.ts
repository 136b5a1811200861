import { type Pagination, pageQuery, request, segment } from "../api/request.ts";

export interface Bucket {
  bucket_id: string;
  name: string;
  created_at: string;
}

export interface Asset {
  name: string;
  size?: number;
  updated_at: string;
}

/** A signed URL: it works without the key, for one asset, for a limited time, with these headers. */
export interface AssetUrl {
  url: string;
  headers: Record<string, string>;
  expires_at: string;
}

export type BucketPage = { buckets: Bucket[]; pagination: Pagination };
export type AssetPage = { assets: Asset[]; pagination: Pagination };

export const listBuckets = (key: string, page: number, pageSize: number) =>
  request<BucketPage>(key, "GET", `/buckets?${pageQuery(page, pageSize)}`);

export const getBucket = (key: string, bucketId: string) =>
  request<Bucket>(key, "GET", `/buckets/${segment(bucketId)}`);

export const createBucket = (key: string, name: string) => request<Bucket>(key, "POST", "/buckets", { name });

export const deleteBucket = (key: string, bucketId: string) =>
  request<undefined>(key, "DELETE", `/buckets/${segment(bucketId)}`);

export const listAssets = (key: string, bucketId: string, page: number, pageSize: number) =>
  request<AssetPage>(key, "GET", `/buckets/${segment(bucketId)}/assets?${pageQuery(page, pageSize)}`);

export const createAsset = (key: string, bucketId: string, name: string) =>
  request<Asset>(key, "PUT", `/buckets/${segment(bucketId)}/assets`, { name });

export const deleteAsset = (key: string, bucketId: string, name: string) =>
  request<undefined>(key, "DELETE", `/buckets/${segment(bucketId)}/assets/${segment(name)}`);

export const createAssetUrl = (key: string, bucketId: string, name: string, operation: "PUT" | "GET") =>
  request<AssetUrl>(key, "POST", `/buckets/${segment(bucketId)}/asset-urls/${segment(name)}`, { operation });
