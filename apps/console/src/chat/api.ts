import { type Pagination, pageQuery, request, segment } from "../api/request.ts";

/** A griptape artifact as runs store them (a run's output, a thread message's `input` and `output`). */
export interface Artifact {
  type: string;
  value: unknown;
  name?: string;
  meta?: { citations?: Citation[] };
}

/** A passage a run's model was given from a knowledge base (docs/api.md, AssistantRun `output.meta.citations`). */
export interface Citation {
  knowledge_base_id: string;
  bucket_id: string;
  asset_name: string;
  chunk_index: number;
  score: number;
}

/** A tool call a run awaits a person's decision on (`status_detail.calls`, the AwaitingApproval event's `calls`). */
export interface ApprovalCall {
  call_id: string;
  tool_id: string;
  tool: string;
  activity: string;
  input: unknown;
  decision?: { approved: boolean; reason?: string };
}

export interface AssistantRun {
  assistant_run_id: string;
  assistant_id: string;
  thread_id?: string;
  input?: string;
  output?: Artifact | null;
  status: string;
  status_detail?: { reason: string; message?: string; calls?: ApprovalCall[] } | null;
}

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

export const getRun = (key: string, runId: string) =>
  request<AssistantRun>(key, "GET", `/assistant-runs/${segment(runId)}`);

/** The assistant's runs not yet ended, newest first: one on the reopened thread is followed again. */
export const listUnfinishedRuns = (key: string, assistantId: string) =>
  request<{ assistant_runs: AssistantRun[] }>(
    key,
    "GET",
    `/assistants/${segment(assistantId)}/runs?status=QUEUED,STARTING,RUNNING&${pageQuery(1, 100)}`,
  );

export const decideApproval = (key: string, runId: string, callId: string, approved: boolean, reason?: string) =>
  request<AssistantRun>(key, "POST", `/assistant-runs/${segment(runId)}/approvals`, {
    decisions: [{ call_id: callId, approved, ...(reason ? { reason } : {}) }],
  });

/** The path `followEvents` follows for a run. */
export const runEventsPath = (runId: string) => `/assistant-runs/${segment(runId)}/events/stream`;
