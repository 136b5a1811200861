import type { Client } from "@connectrpc/connect";
import type { KnowledgeBaseQueriesService } from "@loom/proto/knowledge/v1/knowledge_base_queries_pb";
import type { Logger } from "@loom/telemetry/logger";
import { type AgentLoopSettings, type LoopEnd, runAgentLoop } from "./agent-loop.ts";
import { notesToWrite } from "./approvals/notes.ts";
import { pauseRun } from "./approvals/pause.ts";
import { griptapeEvents, message, type TextArtifact, textArtifact } from "./griptape.ts";
import { type HistoryTurn, type HistoryWindow, historyTurns } from "./history.ts";
import {
  citationOf,
  noRetrieval,
  type Passage,
  passagesInstruction,
  type Retrieval,
  retrieve,
} from "./knowledge/retrieve.ts";
import { withKnowledgeSearch } from "./knowledge/search-tool.ts";
import { countTransition } from "./metrics.ts";
import { type ChatTurn, type Model, ModelFailure } from "./models/port.ts";
import { logEnd } from "./run-end.ts";
import type { RunLog } from "./run-log.ts";
import type { MessageStore } from "./store/messages.ts";
import type { RunRecord, RunRecordStore, StatusDetail } from "./store/run-records.ts";
import { loadRunTools, noTools, type RunTools, type UnavailableTool } from "./tools/run-tools.ts";

/** Why a worker aborted a run's model call. */
export type StopReason = { kind: "cancelled" } | { kind: "timeout" } | { kind: "lease-lost" };

export interface ExecuteDeps {
  store: RunRecordStore & Pick<MessageStore, "latestMessages">;
  /** How much of its thread a run sees. */
  historyWindow: HistoryWindow;
  log: RunLog;
  model: Model;
  /** The tools service and the agent loop's bounds; absent, runs go without their tools. */
  tools?: AgentLoopSettings;
  /** The knowledge service's queries; absent, runs go without their knowledge bases. */
  knowledge?: Client<typeof KnowledgeBaseQueriesService>;
  logger: Logger;
  workerId: string;
  now: () => Date;
}

/**
 * Runs one claimed run (status STARTING, held by this worker) to its end:
 * RUNNING, the agent loop (model calls, tool calls) with its events, then a terminal status. Every
 * write is guarded by status and worker, so a cancel or a reaper that got
 * there first wins and this worker's late writes change nothing.
 */
export async function executeRun(
  run: RunRecord,
  signal: AbortSignal,
  deps: ExecuteDeps,
): Promise<"paused" | undefined> {
  const { store, log, model, workerId, now } = deps;
  const held = { from: ["RUNNING"] as const, worker: workerId };
  // A paused run taken back up is RUNNING already, its events begun (docs/decisions.md, "Approval of tool calls").
  const resumed = run.status === "RUNNING" && run.pending ? run.pending : undefined;
  const running = resumed
    ? run
    : await store.transition(run.id, { from: ["STARTING"], worker: workerId }, "RUNNING", {}, now());
  if (!running) return; // stopped while STARTING: whoever stopped it wrote its end
  if (!resumed) countTransition("STARTING", "RUNNING");

  const input = resumed?.input ?? textArtifact(run.message);
  let begun = resumed !== undefined;
  let retrieval = noRetrieval;
  // Every passage the model was given: the first search's, then its own searches' (the output's citations).
  const found: Passage[] = [];
  const searchable = (tools: RunTools) =>
    deps.knowledge && deps.tools
      ? withKnowledgeSearch(
          tools,
          run,
          deps.knowledge,
          (notes) => log.system(running, notes),
          found,
          deps.tools.toolCall.maxResultChars,
        )
      : tools;
  try {
    let ended: LoopEnd;
    if (resumed) {
      // Events a crash kept from the log (the pause's, decisions') go in first, in order.
      const notes = await notesToWrite(log, { ...running, pending: resumed });
      if (notes.length > 0) await log.system(running, notes);
      // The run's tools as listed now, for the steps after the decided one.
      const runTools = searchable(
        deps.tools ? await loadRunTools(deps.tools.activities, run, signal, deps.tools.toolCall.timeoutMs) : noTools,
      );
      ended = await runAgentLoop(running, { resume: resumed }, runTools, signal, deps);
    } else {
      // The conversation, the run's tools (each listed by its server now) and its knowledge bases' passages at once.
      const [history, listedTools, retrieved] = await Promise.all([
        conversation(run, deps),
        deps.tools ? loadRunTools(deps.tools.activities, run, signal, deps.tools.toolCall.timeoutMs) : noTools,
        deps.knowledge ? retrieve(deps.knowledge, run, run.message, signal) : noRetrieval,
      ]);
      retrieval = retrieved;
      found.push(...retrieval.passages);
      const runTools = searchable(listedTools);
      const turns: HistoryTurn[] = [...instructionTurns(run), ...knowledgeTurns(retrieval), ...history];
      const promptStack = turns.map((t) => message(t.role, t.content, undefined, t.artifact));
      // The claim's and RUNNING's lifecycle events with the first griptape events: one append, not three.
      begun = true;
      await log.start(
        run,
        running,
        [griptapeEvents.startStructureRun(input, now()), griptapeEvents.startPrompt(model.id, promptStack, now())],
        [...runTools.unavailable.map(toolUnavailableEvent), ...retrieval.notes],
      );
      ended = await runAgentLoop(
        running,
        { turns: turns.map(({ role, content }) => ({ role, content })), promptStack, input },
        runTools,
        signal,
        deps,
      );
    }
    if (signal.aborted) throw signal.reason;
    if ("paused" in ended) return (await pauseRun(running, ended.paused, deps)) ? "paused" : undefined;
    const result = ended.answer;
    const output = citedArtifact(result.text, found);
    await log.assistant(running, [
      griptapeEvents.finishPrompt(model.id, result.text, result.inputTokens, result.outputTokens, now()),
      griptapeEvents.finishStructureRun(input, output, now()),
    ]);
    await finish(run, "SUCCEEDED", undefined, output, deps, held, input);
  } catch (error) {
    if (!begun) await log.start(run, running, []); // the lifecycle so far, before the end
    const stop = signal.aborted ? (signal.reason as StopReason) : undefined;
    if (stop?.kind === "cancelled" || stop?.kind === "lease-lost") return; // whoever stopped it wrote its end
    if (stop?.kind === "timeout")
      return finish(
        run,
        "ERROR",
        { reason: "Timeout", message: "the run took longer than RUN_TIMEOUT" },
        undefined,
        deps,
        held,
      );
    if (error instanceof ModelFailure) {
      return finish(
        run,
        error.kind === "failed" ? "FAILED" : "ERROR",
        { reason: error.reason, message: error.message },
        undefined,
        deps,
        held,
      );
    }
    deps.logger.error({ err: error, run_id: run.id }, "run failed unexpectedly");
    return finish(
      run,
      "ERROR",
      { reason: "InternalError", message: "the platform failed to run this request" },
      undefined,
      deps,
      held,
    );
  }
}

async function finish(
  run: RunRecord,
  status: "SUCCEEDED" | "FAILED" | "ERROR",
  statusDetail: StatusDetail | undefined,
  output: TextArtifact | undefined,
  deps: ExecuteDeps,
  guard: { from: readonly ["RUNNING"]; worker: string },
  input?: TextArtifact,
): Promise<undefined> {
  const at = deps.now();
  // A succeeded run on a thread appends its turn as griptape's conversation memory writes one (docs/behaviour.md §5).
  const threadMessage =
    run.threadId && input && output
      ? { input: JSON.stringify(input), output: JSON.stringify(output), metadata: { run_id: run.id } }
      : undefined;
  const ended = await deps.store.transition(
    run.id,
    guard,
    status,
    {
      statusDetail,
      output,
      completedAt: at,
      leaseUntil: undefined,
      ...(threadMessage ? { threadMessage } : {}),
      ...(run.pending ? { pending: undefined } : {}),
    },
    at,
  );
  if (!ended) return;
  countTransition("RUNNING", status);
  // MongoDB keeps the turn on the run until appended: before the terminal event, so the event finds it listed.
  if (ended.threadMessage) {
    try {
      await deps.store.appendRunMessage(ended);
    } catch (error) {
      // The run keeps its thread while marked; the sweep appends the turn, then writes the end.
      deps.logger.warn(
        { err: error, run_id: run.id },
        "appending the run's message to its thread failed; the sweep will",
      );
      return;
    }
  }
  await logEnd(ended, deps);
}

/**
 * The SYSTEM event that says a run goes on without one of its tools, and
 * why (docs/behaviour.md §6): its server could not list its activities.
 */
function toolUnavailableEvent(tool: UnavailableTool) {
  return {
    type: "AssistantRunToolUnavailable",
    payload: {
      tool_id: tool.toolId,
      error: tool.error,
      ...(tool.toolRunId ? { tool_run_id: tool.toolRunId } : {}),
    },
  };
}

/** The run's rules, as read at its creation: one system instruction leading the prompt (docs/behaviour.md §5). */
function instructionTurns(run: RunRecord): ChatTurn[] {
  return run.instructions === undefined ? [] : [{ role: "system", content: run.instructions }];
}

/** The passages found for the run, as a system instruction after its rules (docs/decisions.md, "Runs that know"). */
function knowledgeTurns(retrieval: Retrieval): ChatTurn[] {
  return retrieval.passages.length === 0 ? [] : [{ role: "system", content: passagesInstruction(retrieval.passages) }];
}

/** The run's output; its `meta.citations` the passages the model was given, when it was given any (docs/api.md). */
function citedArtifact(text: string, found: Passage[]): TextArtifact {
  const output = textArtifact(text);
  return found.length === 0
    ? output
    : { ...output, meta: { citations: found.map((p) => ({ ...citationOf(p), score: p.score })) } };
}

/** The thread's messages as earlier turns (within the window), then this run's message. */
async function conversation(run: RunRecord, deps: ExecuteDeps): Promise<HistoryTurn[]> {
  const history = run.threadId
    ? historyTurns(await deps.store.latestMessages(run.threadId, deps.historyWindow.maxMessages), deps.historyWindow)
    : [];
  return [...history, { role: "user", content: run.message }];
}
