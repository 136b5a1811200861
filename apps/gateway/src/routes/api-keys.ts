import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ApiKey, ApiKeyOwnerSchema } from "@loom/proto/identity/v1/identity_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import type { Revocations } from "../revocations.ts";
import { apiKeyListSchema, apiKeySchema, createdApiKeySchema } from "../schemas.ts";
import { boundedName, pageQuery, uuid } from "../validation.ts";

const keyName = boundedName(200).meta({ description: "A name to tell keys apart" });
const nameBody = z.object({ name: keyName });
const renameBody = z.object({ name: keyName.optional() });

export function apiKeyJson(key: ApiKey | undefined) {
  if (!key) throw new Error("the identity service answered without a key");
  return {
    api_key_id: key.apiKeyId,
    organization_id: key.organizationId,
    name: key.name,
    active: key.active,
    created_at: isoTime(key.createdAt),
    created_by: key.createdBy,
    last_used: isoTime(key.lastUsed),
    updated_at: isoTime(key.updatedAt),
  };
}

type Owner = MessageInitShape<typeof ApiKeyOwnerSchema>;
const userOwner = (userId: string): Owner => ({ owner: { case: "userId", value: userId } });
const organizationOwner = (organizationId: string): Owner => ({
  owner: { case: "organizationId", value: organizationId },
});

export function apiKeyOperations({ identity }: ServiceClients, revocations?: Revocations) {
  const create = (owner: Owner, name: string, call: { headers: Record<string, string> }) =>
    identity.createApiKey({ owner, name }, call).then(({ apiKey, value }) => ({ ...apiKeyJson(apiKey), value }));
  const list = (owner: Owner, page: { page: number; page_size: number }, call: { headers: Record<string, string> }) =>
    identity
      .listApiKeys({ owner, page: { page: page.page, pageSize: page.page_size } }, call)
      .then((res) => ({ api_keys: res.apiKeys.map(apiKeyJson), pagination: pagination(res.page) }));

  return [
    defineOperation({
      id: "GetApiKey",
      method: "GET",
      path: "/api-keys/{api_key_id}",
      summary: "One API key (never its value)",
      params: z.object({ api_key_id: uuid }),
      response: { status: 200, description: "The key", schema: apiKeySchema },
      handle: async ({ params, call }) =>
        apiKeyJson((await identity.getApiKey({ apiKeyId: params.api_key_id }, call)).apiKey),
    }),
    defineOperation({
      id: "UpdateApiKey",
      method: "PATCH",
      path: "/api-keys/{api_key_id}",
      summary: "Renames an API key",
      params: z.object({ api_key_id: uuid }),
      body: { schema: renameBody, required: false },
      response: { status: 200, description: "The key as it is now", schema: apiKeySchema },
      handle: async ({ params, body, call }) =>
        apiKeyJson((await identity.updateApiKey({ apiKeyId: params.api_key_id, name: body?.name }, call)).apiKey),
    }),
    defineOperation({
      id: "DeleteApiKey",
      method: "DELETE",
      path: "/api-keys/{api_key_id}",
      summary: "Deletes an API key; it stops working at once",
      params: z.object({ api_key_id: uuid }),
      response: { status: 204, description: "Deleted" },
      async handle({ params, call }) {
        await identity.deleteApiKey({ apiKeyId: params.api_key_id }, call);
        // Identity announces it on the bus for every gateway; this one acts on
        // it now, so the caller's very next request cannot race the announcement.
        revocations?.revoke(params.api_key_id);
      },
    }),
    defineOperation({
      id: "ListOrganizationApiKeys",
      method: "GET",
      path: "/organizations/{organization_id}/api-keys",
      summary: "The organization's own API keys, newest first",
      params: z.object({ organization_id: uuid }),
      query: pageQuery,
      response: { status: 200, description: "A page of keys", schema: apiKeyListSchema },
      handle: ({ params, query, call }) => list(organizationOwner(params.organization_id), query, call),
    }),
    defineOperation({
      id: "CreateOrganizationApiKey",
      method: "POST",
      path: "/organizations/{organization_id}/api-keys",
      summary: "Creates an organization API key; the response carries its value, once",
      params: z.object({ organization_id: uuid }),
      body: { schema: nameBody, required: true },
      response: { status: 201, description: "The new key with its value", schema: createdApiKeySchema },
      handle: ({ params, body, call }) => create(organizationOwner(params.organization_id), body.name, call),
    }),
    defineOperation({
      id: "ListApiKeys",
      method: "GET",
      path: "/users/{user_id}/api-keys",
      summary: "The caller's own user API keys, newest first",
      params: z.object({ user_id: uuid }),
      query: pageQuery,
      response: { status: 200, description: "A page of keys", schema: apiKeyListSchema },
      handle: ({ params, query, call }) => list(userOwner(params.user_id), query, call),
    }),
    defineOperation({
      id: "CreateApiKey",
      method: "POST",
      path: "/users/{user_id}/api-keys",
      summary: "Creates a user API key for the caller; the response carries its value, once",
      params: z.object({ user_id: uuid }),
      body: { schema: nameBody, required: true },
      response: { status: 201, description: "The new key with its value", schema: createdApiKeySchema },
      handle: ({ params, body, call }) => create(userOwner(params.user_id), body.name, call),
    }),
  ];
}
