import { maxSecretValueBytes } from "@loom/contracts/secrets";
import type { Secret } from "@loom/proto/tools/v1/secrets_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { secretListSchema, secretSchema } from "../schemas.ts";
import { boundedName, pageQuery, uuid } from "../validation.ts";

/** A secret's value: write-only, so /openapi.json marks it and no answer holds it. The service bounds it in UTF-8 bytes. */
const secretValue = z
  .string()
  .min(1, "must not be empty")
  .meta({
    writeOnly: true,
    maxLength: maxSecretValueBytes,
    description: `The secret's value, 1 to ${maxSecretValueBytes} bytes in UTF-8: write-only, never in an answer`,
  });

const createBody = z.object({
  name: boundedName(200).meta({ description: "The secret's name" }),
  value: secretValue,
});
const updateBody = createBody.partial();

/** A secret in Griptape Cloud's SecretDetail shape: no value, ever (docs/api.md §2, Secret). */
export function secretJson(s: Secret | undefined) {
  if (!s) throw new Error("the tools service answered without a secret");
  return {
    secret_id: s.secretId,
    organization_id: s.organizationId,
    name: s.name,
    created_at: isoTime(s.createdAt),
    updated_at: isoTime(s.updatedAt),
    last_used: isoTime(s.lastUsed),
  };
}

export function secretOperations({ secrets }: ServiceClients) {
  const secretPath = z.object({ secret_id: uuid });
  return [
    defineOperation({
      id: "ListSecrets",
      method: "GET",
      path: "/secrets",
      summary: "The organization's secrets, newest first, without their values",
      query: pageQuery,
      response: { status: 200, description: "A page of secrets", schema: secretListSchema },
      async handle({ query, call }) {
        const res = await secrets.listSecrets({ page: { page: query.page, pageSize: query.page_size } }, call);
        return { secrets: res.secrets.map(secretJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "CreateSecret",
      method: "POST",
      path: "/secrets",
      summary: "Creates a secret: a value a tool's headers and env vars name by the secret's id (`secret_ref`)",
      body: { schema: createBody, required: true },
      response: { status: 201, description: "The new secret, without its value", schema: secretSchema },
      handle: async ({ body, call }) =>
        secretJson((await secrets.createSecret({ name: body.name, value: body.value }, call)).secret),
    }),
    defineOperation({
      id: "GetSecret",
      method: "GET",
      path: "/secrets/{secret_id}",
      summary: "One secret, without its value",
      params: secretPath,
      response: { status: 200, description: "The secret", schema: secretSchema },
      handle: async ({ params, call }) =>
        secretJson((await secrets.getSecret({ secretId: params.secret_id }, call)).secret),
    }),
    defineOperation({
      id: "UpdateSecret",
      method: "PATCH",
      path: "/secrets/{secret_id}",
      summary: "Changes a secret's name and/or value",
      params: secretPath,
      body: { schema: updateBody, required: false },
      response: { status: 200, description: "The secret as it is now, without its value", schema: secretSchema },
      handle: async ({ params, body, call }) =>
        secretJson(
          (await secrets.updateSecret({ secretId: params.secret_id, name: body?.name, value: body?.value }, call))
            .secret,
        ),
    }),
    defineOperation({
      id: "DeleteSecret",
      method: "DELETE",
      path: "/secrets/{secret_id}",
      summary: "Deletes a secret; tools that name it keep the reference, and their calls then fail",
      params: secretPath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) => void (await secrets.deleteSecret({ secretId: params.secret_id }, call)),
    }),
  ];
}
