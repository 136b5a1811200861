import { type Pagination, pageQuery, request, segment } from "../api/request.ts";

export interface Assistant {
  assistant_id: string;
  name: string;
  description: string;
  /** The default user message, a template; absent when never set. */
  input?: string;
  ruleset_ids: string[];
  tool_ids: string[];
  knowledge_base_ids: string[];
  created_at: string;
}

/** What an edit may change: only the fields sent change. */
export type AssistantChanges = Partial<
  Pick<Assistant, "name" | "description" | "input" | "ruleset_ids" | "tool_ids" | "knowledge_base_ids">
>;

export type AssistantPage = { assistants: Assistant[]; pagination: Pagination };

export const listAssistants = (key: string, page: number, pageSize: number) =>
  request<AssistantPage>(key, "GET", `/assistants?${pageQuery(page, pageSize)}`);

export const getAssistant = (key: string, assistantId: string) =>
  request<Assistant>(key, "GET", `/assistants/${segment(assistantId)}`);

export const createAssistant = (key: string, name: string) => request<Assistant>(key, "POST", "/assistants", { name });

export const updateAssistant = (key: string, assistantId: string, changes: AssistantChanges) =>
  request<Assistant>(key, "PATCH", `/assistants/${segment(assistantId)}`, changes);

export const deleteAssistant = (key: string, assistantId: string) =>
  request<undefined>(key, "DELETE", `/assistants/${segment(assistantId)}`);
