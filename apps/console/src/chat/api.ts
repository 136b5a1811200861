import { type Pagination, pageQuery, request, segment } from "../api/request.ts";
import type { AssistantRun } from "../runs/api.ts";

export interface Thread {
  thread_id: string;
  name: string;
  alias: string | null;
  message_count: number;
  created_at: string;
}

export interface Message {
  message_id: string;
  index: number;
  input: string;
  output: string;
  metadata: { run_id?: string };
}

/**
 * The console's conversations with an assistant are its threads whose `alias`
 * is the assistant's id: threads name no assistant, and ListThreads filters by
 * alias only (docs/decisions.md, "The console").
 */
export const listThreads = (key: string, assistantId: string, page: number, pageSize: number) =>
  request<{ threads: Thread[]; pagination: Pagination }>(
    key,
    "GET",
    `/threads?alias=${segment(assistantId)}&${pageQuery(page, pageSize)}`,
  );

export const createThread = (key: string, assistantId: string, name: string) =>
  request<Thread>(key, "POST", "/threads", { name, alias: assistantId });

export const getThread = (key: string, threadId: string) =>
  request<Thread>(key, "GET", `/threads/${segment(threadId)}`);

/** The whole conversation (without `page_size` the API answers all of a thread's messages, up to 1,000), oldest first. */
export const listMessages = (key: string, threadId: string) =>
  request<{ messages: Message[] }>(key, "GET", `/threads/${segment(threadId)}/messages`);

/** A streamed run on the thread: its events carry the answer token by token. */
export const createRun = (key: string, assistantId: string, threadId: string, input: string) =>
  request<AssistantRun>(key, "POST", `/assistants/${segment(assistantId)}/runs`, {
    input,
    thread_id: threadId,
    stream: true,
  });

export const decideApproval = (key: string, runId: string, callId: string, approved: boolean, reason?: string) =>
  request<AssistantRun>(key, "POST", `/assistant-runs/${segment(runId)}/approvals`, {
    decisions: [{ call_id: callId, approved, ...(reason ? { reason } : {}) }],
  });
