/** The public API, same origin, with the signed-in key; an error answer becomes an Error carrying the API's message. */

export interface Pagination {
  page_number: number;
  page_size: number;
  total_count: number;
  total_pages: number;
  next_page?: number;
  previous_page?: number;
}

export interface Assistant {
  assistant_id: string;
  name: string;
  description: string;
  created_at: string;
}

/** What a caught error says, for a person to read. */
export const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The message a person reads: the API's own (ErrorBody `errors[].message`), else the HTTP status line. */
export function errorMessage(status: number, statusText: string, bodyText: string): string {
  try {
    const body = JSON.parse(bodyText) as { errors?: { message?: string }[] };
    const messages = (body.errors ?? []).map((e) => e.message).filter((m): m is string => Boolean(m));
    if (messages.length > 0) return messages.join("; ");
  } catch {
    // Not JSON (a proxy's page, say): the status line says what happened.
  }
  return `${status} ${statusText}`.trim();
}

async function errorOf(response: Response): Promise<ApiError> {
  return new ApiError(response.status, errorMessage(response.status, response.statusText, await response.text()));
}

export async function request<T>(key: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw await errorOf(response);
  return (response.status === 204 ? undefined : await response.json()) as T;
}

export const listAssistants = (key: string, page: number, pageSize: number) =>
  request<{ assistants: Assistant[]; pagination: Pagination }>(
    key,
    "GET",
    `/assistants?page=${page}&page_size=${pageSize}`,
  );

export const createAssistant = (key: string, name: string) => request<Assistant>(key, "POST", "/assistants", { name });

export interface ApiKey {
  api_key_id: string;
  name: string;
  created_at: string;
  last_used: string;
}

interface User {
  organizations: string[];
}

export type ApiKeyPage = { api_keys: ApiKey[]; pagination: Pagination };

export const listOrganizationApiKeys = (key: string, organizationId: string, page: number, pageSize: number) =>
  request<ApiKeyPage>(key, "GET", `/organizations/${organizationId}/api-keys?page=${page}&page_size=${pageSize}`);

/**
 * The key's organization, which no operation names outright: it is one that
 * every member listed by ListUsers belongs to, and the only one whose key list
 * answers (any other organization's is 404).
 */
export async function keyOrganization(key: string): Promise<string> {
  const { users } = await request<{ users: User[] }>(key, "GET", "/users");
  const shared = (users[0]?.organizations ?? []).filter((id) => users.every((u) => u.organizations.includes(id)));
  for (const organizationId of shared) {
    try {
      await listOrganizationApiKeys(key, organizationId, 1, 1);
      return organizationId;
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) throw e;
    }
  }
  throw new Error("This key's organization could not be found.");
}

export const createOrganizationApiKey = (key: string, organizationId: string, name: string) =>
  request<ApiKey & { value: string }>(key, "POST", `/organizations/${organizationId}/api-keys`, { name });

export const renameApiKey = (key: string, apiKeyId: string, name: string) =>
  request<ApiKey>(key, "PATCH", `/api-keys/${apiKeyId}`, { name });

export const revokeApiKey = (key: string, apiKeyId: string) =>
  request<undefined>(key, "DELETE", `/api-keys/${apiKeyId}`);

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
  request<BucketPage>(key, "GET", `/buckets?page=${page}&page_size=${pageSize}`);

export const getBucket = (key: string, bucketId: string) =>
  request<Bucket>(key, "GET", `/buckets/${encodeURIComponent(bucketId)}`);

export const createBucket = (key: string, name: string) => request<Bucket>(key, "POST", "/buckets", { name });

export const deleteBucket = (key: string, bucketId: string) =>
  request<undefined>(key, "DELETE", `/buckets/${encodeURIComponent(bucketId)}`);

export const listAssets = (key: string, bucketId: string, page: number, pageSize: number) =>
  request<AssetPage>(key, "GET", `/buckets/${encodeURIComponent(bucketId)}/assets?page=${page}&page_size=${pageSize}`);

export const createAsset = (key: string, bucketId: string, name: string) =>
  request<Asset>(key, "PUT", `/buckets/${encodeURIComponent(bucketId)}/assets`, { name });

export const deleteAsset = (key: string, bucketId: string, name: string) =>
  request<undefined>(key, "DELETE", `/buckets/${encodeURIComponent(bucketId)}/assets/${encodeURIComponent(name)}`);

export const createAssetUrl = (key: string, bucketId: string, name: string, operation: "PUT" | "GET") =>
  request<AssetUrl>(key, "POST", `/buckets/${encodeURIComponent(bucketId)}/asset-urls/${encodeURIComponent(name)}`, {
    operation,
  });
