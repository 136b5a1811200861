import { timestampDate } from "@bufbuild/protobuf/wkt";
import { valueToJson } from "@loom/contracts/json-value";
import type { ToolRun } from "@loom/proto/tools/v1/activities_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import {
  artifactSchema,
  toolOpenApiErrorSchema,
  toolOpenApiSchema,
  toolRunListSchema,
  toolRunLogsSchema,
  toolRunSchema,
} from "../schemas.ts";
import { toolOpenApiDocument } from "../tool-openapi.ts";
import { jsonObject, pageQuery, statusQuery, uuid } from "../validation.ts";

const optionalTime = (ts: ToolRun["startedAt"]) => (ts ? timestampDate(ts).toISOString() : null);

/** A tool run in Griptape Cloud's ToolRunDetail shape (docs/api.md, Tool runs). */
export function toolRunJson(run: ToolRun | undefined) {
  if (!run) throw new Error("the tools service answered without a tool run");
  return {
    tool_run_id: run.toolRunId,
    tool_id: run.toolId,
    status: run.status as z.output<typeof toolRunSchema>["status"],
    runtime_path: run.runtimePath,
    input: valueToJson(run.input),
    ...(run.output ? { output: valueToJson(run.output) as z.output<typeof artifactSchema> } : {}),
    ...(run.statusDetail === undefined ? {} : { status_detail: run.statusDetail }),
    ...(run.assistantRunId === undefined ? {} : { assistant_run_id: run.assistantRunId }),
    created_at: isoTime(run.createdAt),
    created_by: run.createdBy,
    started_at: optionalTime(run.startedAt),
    completed_at: optionalTime(run.completedAt),
    updated_at: isoTime(run.updatedAt),
  };
}

/**
 * Calling a tool's server through Loom (docs/behaviour.md, Tool runs): the OpenAPI document of its activities and
 * one activity's call, the paths griptape's GriptapeCloudToolTool uses; and the tool runs that record the calls.
 */
export function toolActivityOperations({ activities }: ServiceClients) {
  const toolPath = z.object({ tool_id: uuid });
  const runPath = z.object({ tool_run_id: uuid });
  return [
    defineOperation({
      id: "GetToolOpenApi",
      method: "GET",
      path: "/tools/{tool_id}/openapi",
      summary:
        "The tool's activities as an OpenAPI document (one `/activities/<name>` POST operation each), as its server lists them now",
      params: toolPath,
      response: {
        status: 200,
        description:
          "The document; when the server could not list its activities, `error` and the tool run that records it",
        schema: z.union([toolOpenApiSchema, toolOpenApiErrorSchema]),
      },
      async handle({ params, call }) {
        const res = await activities.listActivities({ toolId: params.tool_id }, call);
        if (res.error !== undefined) return { error: res.error, tool_run_id: res.toolRunId ?? "" };
        return toolOpenApiDocument(res.toolName, res.activities);
      },
    }),
    defineOperation({
      id: "InvokeToolActivity",
      method: "POST",
      path: "/tools/{tool_id}/activities/{activity}",
      summary: "Calls one of the tool's activities with the body as its input; recorded as a tool run",
      params: toolPath.extend({
        activity: z
          .string()
          .regex(/^[A-Za-z0-9_]{1,200}$/, "must be an activity name: letters, digits and _")
          .meta({ description: "The activity's name, as GetToolOpenApi lists it" }),
      }),
      body: {
        schema: jsonObject.meta({ description: "The activity's input, as its JSON schema says" }),
        required: false,
      },
      response: {
        status: 200,
        description: "The result as a griptape artifact; an ErrorArtifact when the tool failed",
        schema: artifactSchema,
      },
      async handle({ params, body, call }) {
        const res = await activities.invokeActivity(
          { toolId: params.tool_id, activity: params.activity, input: body ?? {} },
          call,
        );
        return JSON.parse(res.artifactJson) as z.output<typeof artifactSchema>;
      },
    }),
    defineOperation({
      id: "GetToolRun",
      method: "GET",
      path: "/tool-runs/{tool_run_id}",
      summary: "One tool run",
      params: runPath,
      response: { status: 200, description: "The tool run", schema: toolRunSchema },
      handle: async ({ params, call }) =>
        toolRunJson((await activities.getToolRun({ toolRunId: params.tool_run_id }, call)).toolRun),
    }),
    defineOperation({
      id: "ListToolRuns",
      method: "GET",
      path: "/tools/{tool_id}/runs",
      summary: "The tool's runs, newest first, optionally only those in the given statuses",
      params: toolPath,
      query: pageQuery.extend({ status: statusQuery }),
      response: { status: 200, description: "A page of tool runs", schema: toolRunListSchema },
      async handle({ params, query, call }) {
        const res = await activities.listToolRuns(
          {
            toolId: params.tool_id,
            page: { page: query.page, pageSize: query.page_size },
            statuses: query.status,
          },
          call,
        );
        return { tool_runs: res.toolRuns.map(toolRunJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "ListToolRunLogs",
      method: "GET",
      path: "/tool-runs/{tool_run_id}/logs",
      summary: "The tool run's log lines, oldest first",
      params: runPath,
      response: { status: 200, description: "The log lines", schema: toolRunLogsSchema },
      handle: async ({ params, call }) => ({
        logs: (await activities.listToolRunLogs({ toolRunId: params.tool_run_id }, call)).logs,
      }),
    }),
  ];
}
