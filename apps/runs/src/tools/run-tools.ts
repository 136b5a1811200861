import type { JsonObject } from "@bufbuild/protobuf";
import { type Client, ConnectError } from "@connectrpc/connect";
import type { ActivitiesService } from "@loom/proto/tools/v1/activities_pb";
import { timeLimit } from "@loom/runtime/time-limit";
import { headersFor } from "@loom/server/principal";
import type { KnowledgeSearchTool } from "../knowledge/search-tool.ts";
import type { ModelTool } from "../models/port.ts";
import type { RunRecord } from "../store/run-records.ts";
import { createModelToolNames } from "./model-tool-names.ts";

/** One activity the model may call, and where its calls go. */
export interface RunActivity {
  toolId: string;
  /** The tool's griptape name (letters and digits): a call's `name` in the run's events. */
  toolName: string;
  /** The activity's name: a call's `path`. */
  activity: string;
  /** A call of it waits for a person's approval (the tool's `server.approval_required`). */
  approvalRequired?: boolean;
}

/** A tool of the run that could not list its activities: the run goes on without it. */
export interface UnavailableTool {
  toolId: string;
  error: string;
  /** The tool run that records the failure, when the tools service made one. */
  toolRunId?: string;
}

export interface RunTools {
  /** What the model is offered, in the run's order of tools. */
  modelTools: ModelTool[];
  /** Each model tool's activity, by its model name. */
  byName: ReadonlyMap<string, RunActivity>;
  unavailable: UnavailableTool[];
  /** The search of the run's knowledge bases, when it is offered (its call goes to the knowledge service, not a tool). */
  knowledgeSearch?: KnowledgeSearchTool;
}

export const noTools: RunTools = { modelTools: [], byName: new Map(), unavailable: [] };

/**
 * The run's tools (its effective `tool_ids`, docs/behaviour.md §5) as the
 * tools service lists their activities now, all asked at once, acting as the
 * run's creator. A tool that cannot be listed (unknown, deleted, its server
 * down or refused by the network policy, slower than `timeoutMs`) is left
 * out and reported: the run goes on with the others. A cancel of the run
 * (`signal`) rejects with its reason.
 */
export async function loadRunTools(
  activities: Client<typeof ActivitiesService>,
  run: RunRecord,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<RunTools> {
  if (run.toolIds.length === 0) return noTools;
  const headers = headersFor({ userId: run.createdBy, organizationId: run.organizationId });
  const listed = await Promise.all(
    run.toolIds.map(async (toolId) => {
      const limit = timeLimit(timeoutMs);
      const timeout = limit.signal;
      try {
        const answer = await activities.listActivities(
          { toolId },
          { headers, signal: AbortSignal.any([signal, timeout]) },
        );
        return { toolId, answer };
      } catch (error) {
        signal.throwIfAborted();
        if (timeout.aborted) return { toolId, failure: `listing its activities took longer than ${timeoutMs} ms` };
        return { toolId, failure: error instanceof ConnectError ? error.rawMessage : String(error) };
      } finally {
        limit.clear();
      }
    }),
  );
  const name = createModelToolNames();
  const modelTools: ModelTool[] = [];
  const byName = new Map<string, RunActivity>();
  const unavailable: UnavailableTool[] = [];
  for (const { toolId, answer, failure } of listed) {
    if (!answer || answer.error !== undefined) {
      unavailable.push({
        toolId,
        error: failure ?? answer?.error ?? "",
        ...(answer?.toolRunId ? { toolRunId: answer.toolRunId } : {}),
      });
      continue;
    }
    for (const activity of answer.activities) {
      const modelName = name({ id: toolId, name: answer.toolName }, activity.name);
      modelTools.push({
        name: modelName,
        description: activity.description,
        inputSchema: inputSchema(activity.inputSchemaJson),
      });
      byName.set(modelName, {
        toolId,
        toolName: answer.toolName,
        activity: activity.name,
        ...(activity.approvalRequired ? { approvalRequired: true } : {}),
      });
    }
  }
  return { modelTools, byName, unavailable };
}

/** An activity's input schema; one the model could not use (not an object) is an object of any properties. */
function inputSchema(json: string): JsonObject {
  try {
    const schema = JSON.parse(json) as unknown;
    if (typeof schema === "object" && schema !== null && !Array.isArray(schema)) return schema as JsonObject;
  } catch {
    // the default below
  }
  return { type: "object", properties: {} };
}
