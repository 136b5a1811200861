import { type Pagination, pageQuery, request } from "../api/request.ts";

export interface Tool {
  tool_id: string;
  name: string;
  description: string;
  server?: {
    url: string;
    transport: "mcp" | "griptape";
    headers?: Record<string, { value: string } | { secret_ref: string }>;
    approval_required?: true | string[];
  };
  created_at: string;
}

export type ToolPage = { tools: Tool[]; pagination: Pagination };

export const listTools = (key: string, page: number, pageSize: number) =>
  request<ToolPage>(key, "GET", `/tools?${pageQuery(page, pageSize)}`);
