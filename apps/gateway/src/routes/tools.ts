import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  ApprovalRequired,
  ApprovalRequiredSchema,
  Tool,
  ToolCodeSchema,
  ToolServerSchema,
} from "@loom/proto/tools/v1/tools_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { envVarSchema, toolCodeSchema, toolListSchema, toolSchema, toolServerSchema } from "../schemas.ts";
import { boundedName, boundedText, pageQuery, uuid } from "../validation.ts";

const createBody = z.object({
  name: boundedName(200).meta({ description: "The tool's name" }),
  description: boundedText(200)
    .optional()
    .meta({ description: "What the tool does, in words: the model reads it to choose a tool" }),
  code: toolCodeSchema.optional(),
  env_vars: z.array(envVarSchema).optional().meta({ description: "Environment variables, stored as given" }),
  tool_config_file: z.string().optional().meta({ description: "The tool's config file path, stored as given" }),
  server: toolServerSchema
    .extend({ headers: toolServerSchema.shape.headers.optional() })
    .optional()
    .meta({ description: "The tool server Loom calls: a remote MCP server or a griptape tool server" }),
});

const updateBody = createBody.partial();

type CodeJson = z.output<typeof toolCodeSchema>;
type ServerJson = z.output<typeof createBody>["server"];

function codeMessage(code: CodeJson | undefined): MessageInitShape<typeof ToolCodeSchema> | undefined {
  if (code === undefined) return undefined;
  if ("github" in code) {
    const { owner, name, push } = code.github;
    return { kind: { case: "github", value: { owner, name, branch: push.branch, tag: push.tag } } };
  }
  if ("data_lake" in code)
    return {
      kind: { case: "dataLake", value: { bucketId: code.data_lake.bucket_id, assetPath: code.data_lake.asset_path } },
    };
  return { kind: { case: "default", value: {} } };
}

function serverMessage(server: ServerJson): MessageInitShape<typeof ToolServerSchema> | undefined {
  if (server === undefined) return undefined;
  return {
    url: server.url,
    transport: server.transport,
    headers: Object.fromEntries(
      Object.entries(server.headers ?? {}).map(([name, header]) => [
        name,
        {
          value:
            "secret_ref" in header
              ? { case: "secretRef" as const, value: header.secret_ref }
              : { case: "plain" as const, value: header.value },
        },
      ]),
    ),
    ...(server.approval_required === undefined ? {} : { approvalRequired: approvalMessage(server.approval_required) }),
  };
}

function approvalMessage(approval: boolean | string[]): MessageInitShape<typeof ApprovalRequiredSchema> {
  return typeof approval === "boolean"
    ? { which: { case: "all", value: approval } }
    : { which: { case: "activities", value: { names: approval } } };
}

/** `true` or the activity names, as set; absent when no activity needs approval. */
function approvalJson(approval: ApprovalRequired | undefined): { approval_required?: true | string[] } {
  const which = approval?.which;
  if (which?.case === "all" && which.value) return { approval_required: true };
  if (which?.case === "activities" && which.value.names.length > 0) return { approval_required: which.value.names };
  return {};
}

function codeJson(code: Tool["code"]): CodeJson {
  const kind = code?.kind;
  if (kind?.case === "github") {
    const { owner, name, branch, tag } = kind.value;
    return { github: { owner, name, push: { branch, ...(tag === undefined ? {} : { tag }) } } };
  }
  if (kind?.case === "dataLake")
    return { data_lake: { bucket_id: kind.value.bucketId, asset_path: kind.value.assetPath } };
  return { default: {} };
}

/** A tool in Griptape Cloud's ToolDetail shape, plus Loom's `server` when one is set (docs/api.md, Tools). */
export function toolJson(t: Tool | undefined) {
  if (!t) throw new Error("the tools service answered without a tool");
  return {
    tool_id: t.toolId,
    organization_id: t.organizationId,
    name: t.name,
    description: t.description,
    code: codeJson(t.code),
    env_vars: t.envVars.map(({ name, value, source }) => ({
      name,
      value,
      ...(source === undefined ? {} : { source: source as "manual" | "secret_ref" }),
    })),
    latest_deployment_id: null,
    ...(t.toolConfigFile === undefined ? {} : { tool_config_file: t.toolConfigFile }),
    ...(t.server
      ? {
          server: {
            url: t.server.url,
            transport: t.server.transport as "mcp" | "griptape",
            headers: Object.fromEntries(
              Object.entries(t.server.headers).map(([name, { value }]) => [
                name,
                value.case === "secretRef" ? { secret_ref: value.value } : { value: value.value ?? "" },
              ]),
            ),
            ...approvalJson(t.server.approvalRequired),
          },
        }
      : {}),
    created_at: isoTime(t.createdAt),
    created_by: t.createdBy,
    updated_at: isoTime(t.updatedAt),
  };
}

export function toolOperations({ tools }: ServiceClients) {
  const toolPath = z.object({ tool_id: uuid });
  return [
    defineOperation({
      id: "ListTools",
      method: "GET",
      path: "/tools",
      summary: "The organization's tools, newest first",
      query: pageQuery,
      response: { status: 200, description: "A page of tools", schema: toolListSchema },
      async handle({ query, call }) {
        const res = await tools.listTools({ page: { page: query.page, pageSize: query.page_size } }, call);
        return { tools: res.tools.map(toolJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "CreateTool",
      method: "POST",
      path: "/tools",
      summary:
        "Creates a tool: a connection to a tool server (Loom's `server`: an MCP server or a griptape tool server)",
      body: { schema: createBody, required: true },
      response: { status: 201, description: "The new tool", schema: toolSchema },
      handle: async ({ body, call }) =>
        toolJson(
          (
            await tools.createTool(
              {
                name: body.name,
                description: body.description,
                code: codeMessage(body.code),
                envVars: body.env_vars,
                toolConfigFile: body.tool_config_file,
                server: serverMessage(body.server),
              },
              call,
            )
          ).tool,
        ),
    }),
    defineOperation({
      id: "GetTool",
      method: "GET",
      path: "/tools/{tool_id}",
      summary: "One tool",
      params: toolPath,
      response: { status: 200, description: "The tool", schema: toolSchema },
      handle: async ({ params, call }) => toolJson((await tools.getTool({ toolId: params.tool_id }, call)).tool),
    }),
    defineOperation({
      id: "UpdateTool",
      method: "PATCH",
      path: "/tools/{tool_id}",
      summary: "Changes the given fields of a tool; a `server` sent replaces the stored one",
      params: toolPath,
      body: { schema: updateBody, required: false },
      response: { status: 200, description: "The tool as it is now", schema: toolSchema },
      handle: async ({ params, body, call }) =>
        toolJson(
          (
            await tools.updateTool(
              {
                toolId: params.tool_id,
                name: body?.name,
                description: body?.description,
                code: codeMessage(body?.code),
                envVars: body?.env_vars && { values: body.env_vars },
                toolConfigFile: body?.tool_config_file,
                server: serverMessage(body?.server),
              },
              call,
            )
          ).tool,
        ),
    }),
    defineOperation({
      id: "DeleteTool",
      method: "DELETE",
      path: "/tools/{tool_id}",
      summary: "Deletes a tool",
      params: toolPath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) => void (await tools.deleteTool({ toolId: params.tool_id }, call)),
    }),
  ];
}
