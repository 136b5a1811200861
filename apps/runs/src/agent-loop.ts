import type { Client } from "@connectrpc/connect";
import type { ActivitiesService } from "@loom/proto/tools/v1/activities_pb";
import { inSpan, SpanKind } from "@loom/telemetry/tracing";
import { deniedOutcome } from "./approvals/denied.ts";
import {
  type ActionsSubtask,
  actionCallsMessage,
  actionResultsMessage,
  griptapeActionEvents,
  griptapeEvents,
  griptapeId,
  listArtifact,
  type TextArtifact,
  type ToolAction,
  textArtifact,
} from "./griptape.ts";
import {
  type GenerateResult,
  type Model,
  ModelFailure,
  type ModelTurn,
  type ToolCall,
  type ToolCallDelta,
} from "./models/port.ts";
import type { RunLog } from "./run-log.ts";
import type { PendingApproval, PendingCall } from "./store/pending-approval.ts";
import type { RunRecord } from "./store/run-records.ts";
import { callTool, type ToolCallBounds } from "./tools/call-tool.ts";
import type { RunTools } from "./tools/run-tools.ts";

/** What a run's tool calls go through, and their bounds (docs/behaviour.md §5, "Runs with tools"). */
export interface AgentLoopSettings {
  activities: Client<typeof ActivitiesService>;
  /** The most model calls one run makes; a model still calling tools at the last is FAILED, MaxStepsExceeded. */
  maxSteps: number;
  toolCall: ToolCallBounds;
  /** How long a paused run waits for its approvals; undecided calls are denied after (RUN_APPROVAL_TIMEOUT_MS). */
  approvalTimeoutMs: number;
}

export interface AgentLoopDeps {
  model: Model;
  log: RunLog;
  /** Absent: runs have no tools (a worker wired without the tools service). */
  tools?: AgentLoopSettings;
  now: () => Date;
}

/** Where the loop starts: a new run's conversation, or a paused run's step whose calls were decided. */
export type LoopStart =
  | { turns: ModelTurn[]; promptStack: object[]; input: TextArtifact }
  | { resume: PendingApproval };

/** How the loop ended: the model's answer, or a step whose calls wait for approval (the run pauses). */
export type LoopEnd = { answer: GenerateResult } | { paused: PendingApproval };

/**
 * The run's agent loop (docs/decisions.md, "Runs that call tools"): the
 * model is called; when it calls tools, they run (all at once), their
 * results go back to it, and it is called again, until it answers or
 * `maxSteps` calls were made. Each step's events are griptape's: the first
 * StartPromptEvent is the caller's (it opens the log), then per step
 * FinishPromptEvent, and with calls StartActionsSubtaskEvent, the calls,
 * FinishActionsSubtaskEvent and the next StartPromptEvent. The last call's
 * FinishPromptEvent is the caller's too (it goes with the run's end).
 * `promptStack` is the first call's griptape messages, grown step by step.
 *
 * A step calling an activity that needs approval runs none of its calls:
 * the loop ends `paused` with what it needs to go on (docs/decisions.md,
 * "Approval of tool calls"); started again from that (`resume`), the step's
 * approved calls run, the denied ones answer the model with the decision.
 */
export async function runAgentLoop(
  run: RunRecord,
  start: LoopStart,
  tools: RunTools,
  signal: AbortSignal,
  deps: AgentLoopDeps,
): Promise<LoopEnd> {
  const { model, now } = deps;
  const append = appendWhileActive(run, deps.log, signal);
  const settings = tools.modelTools.length > 0 || "resume" in start ? deps.tools : undefined;
  const resumed = "resume" in start ? start.resume : undefined;
  const turns = [...(resumed?.turns ?? ("turns" in start ? start.turns : []))];
  const promptStack = [...(resumed?.promptStack ?? ("promptStack" in start ? start.promptStack : []))];
  const input = resumed?.input ?? ("input" in start ? start.input : textArtifact(run.message));
  const promptTaskId = resumed?.promptTaskId ?? griptapeId();
  let step = 1;
  if (resumed && settings) {
    await runStep(
      resumed.subtask,
      resumed.calls,
      settings,
      append([griptapeActionEvents.startActionsSubtask(resumed.subtask, now())]),
    );
    step = resumed.step + 1;
  }
  for (; ; step++) {
    const answer = await modelCall(run, turns, tools, settings !== undefined, signal, deps);
    const calls = answer.toolCalls ?? [];
    // The answer: its FinishPromptEvent goes with the run's end (the caller's).
    if (calls.length === 0 || !settings) return { answer };
    const finishPrompt = griptapeEvents.finishPrompt(
      model.id,
      answer.text,
      answer.inputTokens,
      answer.outputTokens,
      now(),
    );
    if (step >= settings.maxSteps) {
      await append([finishPrompt]);
      throw new ModelFailure(
        "failed",
        "MaxStepsExceeded",
        `the model still called tools after ${settings.maxSteps} steps (RUN_MAX_STEPS)`,
      );
    }
    const subtask: ActionsSubtask = {
      id: griptapeId(),
      parentTaskId: promptTaskId,
      thought: answer.text,
      input: textArtifact(answer.text),
      actions: calls.map((call) => actionOf(call, tools)),
    };
    const stepCalls: PendingCall[] = calls.map((call) => {
      const activity = tools.byName.get(call.name);
      return { call, ...(activity ? { activity } : {}), needsApproval: activity?.approvalRequired ?? false };
    });
    if (stepCalls.some((c) => c.needsApproval)) {
      await append([finishPrompt]);
      const deadline = now().getTime() + settings.approvalTimeoutMs;
      return {
        paused: { step, turns, promptStack, input, promptTaskId, subtask, calls: stepCalls, deadline },
      };
    }
    await runStep(
      subtask,
      stepCalls,
      settings,
      append([finishPrompt, griptapeActionEvents.startActionsSubtask(subtask, now())]),
    );
  }

  /**
   * A step's calls (all at once; a denied one not made), their results given back to the model, the next prompt begun.
   * The step's opening events (`opened`) are written while its calls run, not before them: a run's log write and a
   * call's tool run then share one commit of the store, and the call does not wait for the events' disk flush
   * (docs/decisions.md, "Runs that call tools"). Nothing is written after them until both are done.
   */
  async function runStep(
    subtask: ActionsSubtask,
    stepCalls: PendingCall[],
    settings: AgentLoopSettings,
    opened: Promise<void>,
  ) {
    opened.catch(() => {}); // awaited below, once the calls are done; a failure then fails the run
    const outcomes = await Promise.all(
      stepCalls.map(({ call, activity, decision }) =>
        decision && !decision.approved
          ? Promise.resolve(deniedOutcome(call, decision, settings.toolCall.maxResultChars))
          : tools.knowledgeSearch && call.name === tools.knowledgeSearch.name
            ? tools.knowledgeSearch.search(call, signal)
            : inSpan(
                `tool ${call.name}`,
                { kind: SpanKind.CLIENT, attributes: { "gen_ai.tool.name": call.name } },
                undefined,
                () => callTool(settings.activities, run, call, activity, settings.toolCall, signal),
              ),
      ),
    );
    await opened;
    signal.throwIfAborted();
    const calls = stepCalls.map((c) => c.call);
    turns.push(
      { role: "assistant", content: subtask.thought, toolCalls: calls },
      {
        role: "tool",
        results: calls.map((call, i) => ({
          callId: call.id,
          name: call.name,
          text: outcomes[i]!.text,
          isError: outcomes[i]!.isError,
        })),
      },
    );
    promptStack.push(
      actionCallsMessage(subtask.thought, subtask.actions),
      actionResultsMessage(subtask.actions.map((action, i) => ({ action, text: outcomes[i]!.text }))),
    );
    await append([
      griptapeActionEvents.finishActionsSubtask(subtask, listArtifact(outcomes.map((o) => o.artifact)), now()),
      griptapeEvents.startPrompt(model.id, promptStack, now()),
    ]);
  }
}

/** One model call, in its span, its streamed text and tool-call pieces written as griptape's chunk events. */
function modelCall(
  run: RunRecord,
  turns: ModelTurn[],
  tools: RunTools,
  withTools: boolean,
  signal: AbortSignal,
  deps: AgentLoopDeps,
): Promise<GenerateResult> {
  const { model, now } = deps;
  const append = appendWhileActive(run, deps.log, signal);
  return inSpan(
    `model ${model.id}`,
    { kind: SpanKind.CLIENT, attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": model.id } },
    undefined,
    async (span) => {
      const answer = await model.generate({
        messages: turns,
        signal,
        ...(run.outputSchema ? { outputSchema: run.outputSchema } : {}),
        ...(withTools ? { tools: tools.modelTools } : {}),
        ...(run.stream
          ? {
              onChunk: (token: string) => append([griptapeEvents.textChunk(token, now())]),
              onToolCallDelta: (delta: ToolCallDelta) => {
                const head = delta.name === undefined ? {} : { tag: delta.id, ...actionName(delta.name, tools) };
                return append([
                  griptapeActionEvents.actionChunk(
                    { index: delta.index, partialInput: delta.partialInput, ...head },
                    now(),
                  ),
                ]);
              },
            }
          : {}),
      });
      span.setAttributes({
        "gen_ai.usage.input_tokens": answer.inputTokens,
        "gen_ai.usage.output_tokens": answer.outputTokens,
      });
      return answer;
    },
  );
}

/** Appends griptape events until the run is stopped, so that nothing lands after its terminal event. */
const appendWhileActive =
  (run: RunRecord, log: RunLog, signal: AbortSignal) => async (payloads: Array<{ type: string; meta?: object }>) => {
    if (!signal.aborted) await log.assistant(run, payloads);
  };

/** A model tool's griptape names: the tool (`name`) and the activity (`path`); an unknown one is its model name alone. */
function actionName(modelName: string, tools: RunTools): { name: string; path?: string } {
  const activity = tools.byName.get(modelName);
  return activity ? { name: activity.toolName, path: activity.activity } : { name: modelName };
}

function actionOf(call: ToolCall, tools: RunTools): ToolAction {
  const { name, path } = actionName(call.name, tools);
  return { tag: call.id, name, path: path ?? "", input: call.input };
}
