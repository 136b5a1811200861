import { type Pagination, pageQuery, request } from "../api/request.ts";

export interface Assistant {
  assistant_id: string;
  name: string;
  description: string;
  created_at: string;
}

export type AssistantPage = { assistants: Assistant[]; pagination: Pagination };

export const listAssistants = (key: string, page: number, pageSize: number) =>
  request<AssistantPage>(key, "GET", `/assistants?${pageQuery(page, pageSize)}`);

export const createAssistant = (key: string, name: string) => request<Assistant>(key, "POST", "/assistants", { name });
