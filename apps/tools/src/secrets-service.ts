import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { invalidArgument, notFound, type Violation } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { maxSecretValueBytes } from "@loom/contracts/secrets";
import { checkText, nameProblem } from "@loom/contracts/text";
import type { SecretsService } from "@loom/proto/tools/v1/secrets_pb";
import { requirePrincipal } from "@loom/server/principal";
import { sealValue } from "./secret-cipher.ts";
import type { SecretKeyring } from "./secret-keys.ts";
import type { ToolsStore } from "./store/port.ts";
import type { SecretRecord } from "./store/secrets.ts";

/** A value's bound; the message never repeats the value. */
function checkValue(violations: Violation[], value: string | undefined): void {
  if (value === undefined) return;
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes < 1 || bytes > maxSecretValueBytes)
    violations.push({ path: "body.value", message: `must be 1 to ${maxSecretValueBytes} bytes long in UTF-8` });
}

/** The SecretsService handlers (docs/behaviour.md §10), on the tools store's secrets part. */
export function createSecretsHandlers(deps: {
  store: ToolsStore;
  keyring: SecretKeyring;
  now?: () => Date;
}): ServiceImpl<typeof SecretsService> {
  const { store, keyring } = deps;
  const now = deps.now ?? (() => new Date());

  return {
    async createSecret(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      checkValue(violations, req.value);
      if (violations.length > 0) throw invalidArgument(violations);
      const id = newId();
      const at = now();
      const secret: SecretRecord = {
        id,
        organizationId,
        name: req.name,
        sealed: sealValue(keyring, { organizationId, secretId: id }, req.value),
        createdAt: at,
        updatedAt: at,
        lastUsed: at,
      };
      await store.insertSecret(secret);
      return { secret: secretMessage(secret) };
    },

    async getSecret(req, ctx) {
      const found = await store.getSecret(requirePrincipal(ctx).organizationId, req.secretId);
      if (!found) throw notFound("secret");
      return { secret: secretMessage(found) };
    },

    async updateSecret(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      checkValue(violations, req.value);
      if (violations.length > 0) throw invalidArgument(violations);
      const patch = {
        ...(req.name === undefined ? {} : { name: req.name }),
        ...(req.value === undefined
          ? {}
          : { sealed: sealValue(keyring, { organizationId, secretId: req.secretId }, req.value) }),
      };
      const updated =
        Object.keys(patch).length === 0
          ? await store.getSecret(organizationId, req.secretId)
          : await store.updateSecret(organizationId, req.secretId, patch, now());
      if (!updated) throw notFound("secret");
      return { secret: secretMessage(updated) };
    },

    async deleteSecret(req, ctx) {
      if (!(await store.deleteSecret(requirePrincipal(ctx).organizationId, req.secretId))) throw notFound("secret");
      return {};
    },

    async listSecrets(req, ctx) {
      const window = pageWindow(req.page);
      const { items, totalCount } = await store.listSecrets(
        requirePrincipal(ctx).organizationId,
        window.skip,
        window.pageSize,
      );
      return { secrets: items.map(secretMessage), page: pageInfo(window, totalCount) };
    },
  };
}

/** A secret as shown: never its value, sealed or not. */
function secretMessage(s: SecretRecord) {
  return {
    secretId: s.id,
    organizationId: s.organizationId,
    name: s.name,
    createdAt: timestampFromDate(s.createdAt),
    updatedAt: timestampFromDate(s.updatedAt),
    lastUsed: timestampFromDate(s.lastUsed),
  };
}
