import { type Pagination, pageQuery, request, segment } from "../api/request.ts";

export interface ToolServer {
  url: string;
  transport: "mcp" | "griptape";
  headers?: Record<string, { value: string } | { secret_ref: string }>;
  approval_required?: true | string[];
}

export interface Tool {
  tool_id: string;
  name: string;
  description: string;
  server?: ToolServer;
  created_at: string;
}

export type ToolPage = { tools: Tool[]; pagination: Pagination };

/** What the tool form sets: the server replaces the stored one whole (its headers given back as they were). */
export interface ToolFields {
  name: string;
  description: string;
  server: ToolServer;
}

/** An activity's input schema, as GetToolOpenApi gives it: top-level properties, each with one `type`. */
export interface InputSchema {
  type?: string;
  properties?: Record<string, { type?: string; description?: string; enum?: unknown[] }>;
  required?: string[];
}

/** GetToolOpenApi's answer: one POST per activity, or what went wrong listing them. */
export type ToolOpenApi =
  | {
      paths: Record<
        string,
        {
          post?: {
            operationId?: string;
            description?: string;
            requestBody?: { content?: { "application/json"?: { schema?: InputSchema } } };
          };
        }
      >;
    }
  | { error: string; tool_run_id: string };

/** A call's result: a griptape artifact (an ErrorArtifact when the tool failed). */
export interface Artifact {
  type: string;
  value: unknown;
}

/** The request body; an empty description is left out (the API takes 1 to 200 characters, or none). */
const body = ({ description, ...rest }: ToolFields) => ({ ...rest, ...(description ? { description } : {}) });

const toolPath = (toolId: string) => `/tools/${segment(toolId)}`;

export const listTools = (key: string, page: number, pageSize: number) =>
  request<ToolPage>(key, "GET", `/tools?${pageQuery(page, pageSize)}`);

export const getTool = (key: string, toolId: string) => request<Tool>(key, "GET", toolPath(toolId));

export const createTool = (key: string, fields: ToolFields) => request<Tool>(key, "POST", "/tools", body(fields));

export const updateTool = (key: string, toolId: string, fields: ToolFields) =>
  request<Tool>(key, "PATCH", toolPath(toolId), body(fields));

export const deleteTool = (key: string, toolId: string) => request<undefined>(key, "DELETE", toolPath(toolId));

export const getToolOpenApi = (key: string, toolId: string) =>
  request<ToolOpenApi>(key, "GET", `${toolPath(toolId)}/openapi`);

export const invokeToolActivity = (key: string, toolId: string, activity: string, input: Record<string, unknown>) =>
  request<Artifact>(key, "POST", `${toolPath(toolId)}/activities/${segment(activity)}`, input);
