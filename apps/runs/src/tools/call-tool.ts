import { type Client, ConnectError } from "@connectrpc/connect";
import type { ActivitiesService } from "@loom/proto/tools/v1/activities_pb";
import { timeLimit } from "@loom/runtime/time-limit";
import { headersFor } from "@loom/server/principal";
import { errorArtifact, type SerializedArtifact } from "../griptape.ts";
import type { ToolCall } from "../models/port.ts";
import type { RunRecord } from "../store/run-records.ts";
import { artifactText, boundedText } from "./artifact-text.ts";
import type { RunActivity } from "./run-tools.ts";

export interface ToolCallBounds {
  /** A call still going after this long is aborted, and its result is an error. */
  timeoutMs: number;
  /** The most characters of a result the model is given. */
  maxResultChars: number;
}

/** A call's outcome: its artifact (for the run's events, named `<tag> output`), and the text the model is given. */
export interface ToolCallOutcome {
  artifact: SerializedArtifact;
  text: string;
  isError: boolean;
}

/**
 * Calls one activity through the tools service, acting as the run's creator.
 * Every failure is an outcome the model sees (an ErrorArtifact): the tool's
 * own error, an unknown tool name, an input that could not be read, an RPC error, a call over
 * `bounds.timeoutMs` (aborted, which aborts the tool server's request). Only
 * a stop of the run (`signal`: a cancel, its timeout) rejects, with its reason.
 */
export async function callTool(
  activities: Client<typeof ActivitiesService>,
  run: RunRecord,
  call: ToolCall,
  activity: RunActivity | undefined,
  bounds: ToolCallBounds,
  signal: AbortSignal,
): Promise<ToolCallOutcome> {
  const named = `${call.id} output`;
  const failed = (message: string): ToolCallOutcome => ({
    artifact: errorArtifact(message, named),
    text: boundedText(message, bounds.maxResultChars),
    isError: true,
  });
  if (!activity) return failed(`there is no tool named ${call.name}`);
  if (call.inputError !== undefined) return failed(`the call's input could not be read: ${call.inputError}`);
  // Cleared when the call ends: an uncleared timer would fire long after a call of milliseconds.
  const limit = timeLimit(bounds.timeoutMs);
  const timeout = limit.signal;
  try {
    const answer = await activities.invokeActivity(
      { toolId: activity.toolId, activity: activity.activity, input: call.input, assistantRunId: run.id },
      {
        headers: headersFor({ userId: run.createdBy, organizationId: run.organizationId }),
        signal: AbortSignal.any([signal, timeout]),
      },
    );
    const artifact = parsedArtifact(answer.artifactJson);
    if (!artifact) return failed("the tool's answer is not an artifact");
    return {
      artifact: { ...artifact, name: named },
      text: boundedText(artifactText(artifact), bounds.maxResultChars),
      isError: answer.isError || artifact.type === "ErrorArtifact",
    };
  } catch (error) {
    signal.throwIfAborted();
    if (timeout.aborted) return failed(`the tool call took longer than ${bounds.timeoutMs} ms and was stopped`);
    return failed(`the tool call failed: ${error instanceof ConnectError ? error.rawMessage : String(error)}`);
  } finally {
    limit.clear();
  }
}

function parsedArtifact(json: string): SerializedArtifact | undefined {
  try {
    const value = JSON.parse(json) as unknown;
    if (
      typeof value === "object" &&
      value !== null &&
      !Array.isArray(value) &&
      typeof (value as { type?: unknown }).type === "string"
    )
      return value as SerializedArtifact;
  } catch {
    // not JSON: not an artifact
  }
  return undefined;
}
