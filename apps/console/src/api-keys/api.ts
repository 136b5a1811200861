import { ApiError, type Pagination, pageQuery, request, segment } from "../api/request.ts";

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
  request<ApiKeyPage>(key, "GET", `/organizations/${segment(organizationId)}/api-keys?${pageQuery(page, pageSize)}`);

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
  request<ApiKey & { value: string }>(key, "POST", `/organizations/${segment(organizationId)}/api-keys`, { name });

export const renameApiKey = (key: string, apiKeyId: string, name: string) =>
  request<ApiKey>(key, "PATCH", `/api-keys/${segment(apiKeyId)}`, { name });

export const revokeApiKey = (key: string, apiKeyId: string) =>
  request<undefined>(key, "DELETE", `/api-keys/${segment(apiKeyId)}`);
