import { type Pagination, pageQuery, request, segment } from "../api/request.ts";

/** A run's statuses, in the order a run goes through them (docs/api.md §3); the last four are terminal. */
export const runStatuses = ["QUEUED", "STARTING", "RUNNING", "SUCCEEDED", "FAILED", "ERROR", "CANCELLED"] as const;
export type RunStatus = (typeof runStatuses)[number];

export const isTerminal = (status: string) => ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"].includes(status);

export interface AssistantRun {
  assistant_run_id: string;
  assistant_id: string;
  thread_id?: string;
  input?: string;
  /** The answer, a griptape TextArtifact, once the run succeeded. */
  output?: { value?: unknown } | null;
  status: string;
  status_detail?: { reason: string; message?: string };
  created_at: string;
  completed_at: string | null;
}

export type AssistantRunPage = { assistant_runs: AssistantRun[]; pagination: Pagination };

/** One assistant's runs, newest first; `status` narrows them on the server (none: every status). */
export const listAssistantRuns = (
  key: string,
  assistantId: string,
  status: RunStatus | null,
  page: number,
  pageSize: number,
) =>
  request<AssistantRunPage>(
    key,
    "GET",
    `/assistants/${segment(assistantId)}/runs?${pageQuery(page, pageSize)}${status ? `&status=${status}` : ""}`,
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
