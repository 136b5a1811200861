import { type Pagination, pageQuery, request, segment } from "../api/request.ts";

/** A run's statuses, in the order a run goes through them (docs/api.md §3); the last four are terminal. */
export const runStatuses = ["QUEUED", "STARTING", "RUNNING", "SUCCEEDED", "FAILED", "ERROR", "CANCELLED"] as const;
export type RunStatus = (typeof runStatuses)[number];

export const isTerminal = (status: string) => ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"].includes(status);

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
  /** The answer, a griptape TextArtifact, once the run succeeded. */
  output?: Artifact | null;
  status: string;
  status_detail?: { reason: string; message?: string; calls?: ApprovalCall[] } | null;
  created_at: string;
  completed_at: string | null;
}

export type AssistantRunPage = { assistant_runs: AssistantRun[]; pagination: Pagination };

/** One assistant's runs, newest first; `statuses` narrows them on the server (none: every status). */
export const listAssistantRuns = (
  key: string,
  assistantId: string,
  statuses: readonly RunStatus[],
  page: number,
  pageSize: number,
) =>
  request<AssistantRunPage>(
    key,
    "GET",
    `/assistants/${segment(assistantId)}/runs?${pageQuery(page, pageSize)}${statuses.length ? `&status=${statuses.join(",")}` : ""}`,
  );

export const getAssistantRun = (key: string, runId: string) =>
  request<AssistantRun>(key, "GET", `/assistant-runs/${segment(runId)}`);

export const cancelAssistantRun = (key: string, runId: string) =>
  request<AssistantRun>(key, "POST", `/assistant-runs/${segment(runId)}/cancel`);

/** The run's event stream, for `followEvents`: the log replayed from its start, then live until the run ends. */
export const runEventsPath = (runId: string) => `/assistant-runs/${segment(runId)}/events/stream`;

/** The console's Runs screen for one assistant (and status): a shareable URL, as the Assistants screen links it. */
export function runsScreenUrl(assistantId: string, status: RunStatus | null = null): string {
  const query = new URLSearchParams({ assistant: assistantId, ...(status ? { status } : {}) });
  return `/console/runs?${query}`;
}

/** The console's page of one run: a shareable URL, as the Chat screen links it. */
export const runScreenUrl = (runId: string) => `/console/runs/${segment(runId)}`;
