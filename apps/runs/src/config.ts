import { env } from "@loom/runtime/config";
import { services } from "@loom/services/registry";
import { serviceUrlSettings, standaloneSettings } from "@loom/services/settings";
import { z } from "zod";
import { modelSettings } from "./models/resolve.ts";

/** The run engine's settings; the all-in-one process reuses them as they are. */
export const runSettings = {
  ...modelSettings,
  /** A run still going after this long becomes ERROR, reason Timeout (docs/behaviour.md §5). */
  RUN_TIMEOUT_MS: env.duration(10 * 60 * 1000),
  /** A claimed run whose worker stops renewing for this long becomes ERROR, reason WorkerLost. */
  RUN_LEASE_MS: env.duration(15_000),
  RUN_POLL_MS: env.duration(250),
  /** Runs one replica executes at once. */
  RUN_WORKER_CONCURRENCY: z.coerce.number().int().min(1).default(16),
  /** Runs one organization may have executing at once, across replicas. */
  RUN_MAX_PER_ORGANIZATION: z.coerce.number().int().min(1).default(8),
  /** Runs one organization may have queued; a create past it is refused (429) rather than growing the queue. */
  RUN_MAX_QUEUED_PER_ORGANIZATION: z.coerce.number().int().min(1).default(1000),
  /** The most messages of its thread a run sees as earlier turns, the newest kept (docs/behaviour.md §5). */
  THREAD_HISTORY_MAX_MESSAGES: z.coerce.number().int().min(0).default(100),
  /** About how many tokens (characters / 4) of its thread's messages a run sees, the newest kept. */
  THREAD_HISTORY_MAX_TOKENS: z.coerce.number().int().min(0).default(16_000),
  /** The most model calls one run makes in its agent loop; a model still calling tools at the last is FAILED (docs/behaviour.md §5). */
  RUN_MAX_STEPS: z.coerce.number().int().min(1).default(20),
  /** A tool call (or the listing of a tool's activities) still going after this long is aborted; the model gets an error as its result. */
  RUN_TOOL_CALL_TIMEOUT_MS: env.duration(60 * 1000),
  /** The most characters of a tool's result the model is given; a longer one is cut, with a note saying so. */
  RUN_TOOL_RESULT_MAX_CHARS: z.coerce.number().int().min(100).default(20_000),
  /** How long a run paused for approval of its tool calls waits; calls still undecided then are denied (docs/behaviour.md §5). */
  RUN_APPROVAL_TIMEOUT_MS: env.duration(24 * 60 * 60 * 1000),
  /** A chat call (streamed or not) still going after this long is 503 (DEADLINE_EXCEEDED); the provider request is aborted. */
  CHAT_TIMEOUT_MS: env.duration(5 * 60 * 1000),
};

/** The runs service run on its own (one Deployment in production). */
export const runsConfigSchema = z.object({
  ...standaloneSettings("runs"),
  ...runSettings,
  // ASSISTANTS_URL, EVENTS_URL, TOOLS_URL, KNOWLEDGE_URL: the services it calls (the service registry's `calls`).
  ...serviceUrlSettings(services.runs.calls),
  NATS_URL: env.url().optional(),
});
