import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { invalidArgument, notFound, type Violation } from "@loom/contracts/errors";
import { isUuid, newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { ActivitiesService } from "@loom/proto/tools/v1/activities_pb";
import { SecretsService } from "@loom/proto/tools/v1/secrets_pb";
import {
  type ApprovalRequiredSchema,
  type ToolCodeSchema,
  type ToolSchema,
  ToolsService,
} from "@loom/proto/tools/v1/tools_pb";
import { requirePrincipal } from "@loom/server/principal";
import { type RpcService, storeBackedService } from "@loom/server/rpc-service";
import { type ActivitiesDeps, createActivitiesHandlers } from "./activities-service.ts";
import { checkCode, checkEnvVars, checkServer, checkToolTexts } from "./field-checks.ts";
import type { SecretKeyring } from "./secret-keys.ts";
import { checkSecretRefs } from "./secret-refs.ts";
import { createSecretsHandlers } from "./secrets-service.ts";
import type { ToolCode, ToolPatch, ToolRecord } from "./store/port.ts";

/**
 * The tools service: tools (ToolsService), the secrets they name
 * (SecretsService) and calling their servers (ActivitiesService), one store.
 */
export function createToolsService(deps: ActivitiesDeps & { keyring: SecretKeyring }): RpcService {
  const { store } = deps;
  const now = deps.now ?? (() => new Date());

  const impl: ServiceImpl<typeof ToolsService> = {
    async createTool(req, ctx) {
      const principal = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkToolTexts(violations, req);
      const code = checkCode(violations, "body.code", req.code);
      const envVars = checkEnvVars(violations, "body.env_vars", req.envVars);
      const server = checkServer(violations, "body.server", req.server);
      await checkSecretRefs(violations, store, principal.organizationId, envVars, server);
      if (violations.length > 0) throw invalidArgument(violations);
      const at = now();
      const tool: ToolRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        name: req.name,
        description: req.description ?? "",
        code: code ?? { default: {} },
        envVars,
        ...(req.toolConfigFile === undefined ? {} : { toolConfigFile: req.toolConfigFile }),
        ...(server ? { server } : {}),
        createdBy: principal.userId,
        createdAt: at,
        updatedAt: at,
      };
      await store.insert(tool);
      return { tool: toolMessage(tool) };
    },

    async getTool(req, ctx) {
      const found = await store.get(requirePrincipal(ctx).organizationId, req.toolId);
      if (!found) throw notFound("tool");
      return { tool: toolMessage(found) };
    },

    async updateTool(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkToolTexts(violations, req);
      const patch: ToolPatch = {
        name: req.name,
        description: req.description,
        code: checkCode(violations, "body.code", req.code),
        envVars: req.envVars && checkEnvVars(violations, "body.env_vars", req.envVars.values),
        toolConfigFile: req.toolConfigFile,
        server: checkServer(violations, "body.server", req.server),
      };
      await checkSecretRefs(violations, store, organizationId, patch.envVars, patch.server);
      if (violations.length > 0) throw invalidArgument(violations);
      const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as ToolPatch;
      const updated =
        Object.keys(given).length === 0
          ? await store.get(organizationId, req.toolId)
          : await store.update(organizationId, req.toolId, given, now());
      if (!updated) throw notFound("tool");
      return { tool: toolMessage(updated) };
    },

    async deleteTool(req, ctx) {
      if (!(await store.delete(requirePrincipal(ctx).organizationId, req.toolId))) throw notFound("tool");
      return {};
    },

    async listTools(req, ctx) {
      const window = pageWindow(req.page);
      const { items, totalCount } = await store.list(
        requirePrincipal(ctx).organizationId,
        window.skip,
        window.pageSize,
      );
      return { tools: items.map(toolMessage), page: pageInfo(window, totalCount) };
    },

    async resolveTools(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const asked = req.toolIds.map((id) => id.toLowerCase());
      const found = new Map((await store.getMany(organizationId, asked.filter(isUuid))).map((t) => [t.id, t]));
      return {
        tools: asked.flatMap((id) => (found.has(id) ? [toolMessage(found.get(id)!)] : [])),
        missingIds: req.toolIds.filter((_, i) => !found.has(asked[i]!)),
      };
    },
  };

  // Secrets are the tools service's too: they live beside the tools that name them.
  const secrets = createSecretsHandlers({ store, keyring: deps.keyring, now });
  const activities = createActivitiesHandlers(deps);
  return storeBackedService(
    "tools",
    (router) => {
      router.service(ToolsService, impl);
      router.service(SecretsService, secrets);
      router.service(ActivitiesService, activities);
    },
    store,
  );
}

function codeMessage(code: ToolCode): MessageInitShape<typeof ToolCodeSchema> {
  if ("github" in code) {
    const { owner, name, push } = code.github;
    return { kind: { case: "github" as const, value: { owner, name, branch: push.branch, tag: push.tag } } };
  }
  if ("data_lake" in code) {
    const { bucket_id, asset_path } = code.data_lake;
    return { kind: { case: "dataLake" as const, value: { bucketId: bucket_id, assetPath: asset_path } } };
  }
  return { kind: { case: "default" as const, value: {} } };
}

function toolMessage(t: ToolRecord): MessageInitShape<typeof ToolSchema> {
  return {
    toolId: t.id,
    organizationId: t.organizationId,
    name: t.name,
    description: t.description,
    code: codeMessage(t.code),
    envVars: t.envVars,
    toolConfigFile: t.toolConfigFile,
    server: t.server && {
      url: t.server.url,
      transport: t.server.transport,
      headers: Object.fromEntries(
        Object.entries(t.server.headers).map(([name, header]) => [
          name,
          {
            value:
              "secretRef" in header
                ? { case: "secretRef" as const, value: header.secretRef }
                : { case: "plain" as const, value: header.value },
          },
        ]),
      ),
      approvalRequired: approvalMessage(t.server.approvalRequired),
    },
    createdBy: t.createdBy,
    createdAt: timestampFromDate(t.createdAt),
    updatedAt: timestampFromDate(t.updatedAt),
  };
}

function approvalMessage(
  approval: true | string[] | undefined,
): MessageInitShape<typeof ApprovalRequiredSchema> | undefined {
  if (approval === undefined) return undefined;
  return approval === true
    ? { which: { case: "all", value: true } }
    : { which: { case: "activities", value: { names: approval } } };
}
