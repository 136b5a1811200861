import type { Client } from "@connectrpc/connect";
import type { KnowledgeBaseQueriesService } from "@loom/proto/knowledge/v1/knowledge_base_queries_pb";
import { errorArtifact, textArtifact } from "../griptape.ts";
import type { ToolCall } from "../models/port.ts";
import type { RunRecord } from "../store/run-records.ts";
import { boundedText } from "../tools/artifact-text.ts";
import type { ToolCallOutcome } from "../tools/call-tool.ts";
import type { RunTools } from "../tools/run-tools.ts";
import { numberedPassages, type Passage, retrieve } from "./retrieve.ts";

/** The search tool's model name, and its griptape names in the run's events (a tool `KnowledgeBases`, activity `search`). */
export const knowledgeSearchName = "knowledge_search";
const griptapeNames = { toolId: "", toolName: "KnowledgeBases", activity: "search" };

/** The search a run's model may make itself: its name, and the call that runs it. */
export interface KnowledgeSearchTool {
  name: string;
  search: (call: ToolCall, signal: AbortSignal) => Promise<ToolCallOutcome>;
}

/**
 * The run's tools with the knowledge search added (docs/decisions.md, "Runs
 * that know"): the model may search the run's knowledge bases again with its
 * own `query`, all of them or the one it names. Each search is written to the
 * run's events as the first one is, and what it finds goes to `found` (the
 * output's citations). A run without knowledge bases, or whose tools already
 * hold the name, is not offered it.
 */
export function withKnowledgeSearch(
  tools: RunTools,
  run: RunRecord,
  queries: Client<typeof KnowledgeBaseQueriesService>,
  report: (notes: Array<{ type: string; payload: object }>) => Promise<void>,
  found: Passage[],
  maxResultChars: number,
): RunTools {
  if (run.knowledgeBaseIds.length === 0 || tools.byName.has(knowledgeSearchName)) return tools;
  const search = async (call: ToolCall, signal: AbortSignal): Promise<ToolCallOutcome> => {
    const named = `${call.id} output`;
    const failed = (message: string): ToolCallOutcome => ({
      artifact: errorArtifact(message, named),
      text: message,
      isError: true,
    });
    const { query, knowledge_base_id: only } = call.input;
    if (typeof query !== "string" || query.trim() === "") return failed("the search needs a query: a non-empty string");
    if (only !== undefined && (typeof only !== "string" || !run.knowledgeBaseIds.includes(only)))
      return failed(`knowledge_base_id must be one of ${run.knowledgeBaseIds.join(", ")}`);
    const retrieval = await retrieve(queries, only ? { ...run, knowledgeBaseIds: [only] } : run, query, signal);
    await report(retrieval.notes);
    found.push(...retrieval.passages);
    const text = retrieval.passages.length === 0 ? "No passages were found." : numberedPassages(retrieval.passages);
    return {
      artifact: { ...textArtifact(text, undefined, named) },
      text: boundedText(text, maxResultChars),
      isError: false,
    };
  };
  const byName = new Map(tools.byName).set(knowledgeSearchName, griptapeNames);
  return {
    ...tools,
    byName,
    modelTools: [
      ...tools.modelTools,
      {
        name: knowledgeSearchName,
        description:
          "Searches the knowledge bases of this conversation for passages about a query; answers the passages found, numbered, each with its source.",
        inputSchema: {
          type: "object",
          properties: {
            query: { type: "string", description: "What to search for." },
            knowledge_base_id: {
              type: "string",
              enum: run.knowledgeBaseIds,
              description: "Only this knowledge base; absent, all of them.",
            },
          },
          required: ["query"],
        },
      },
    ],
    knowledgeSearch: { name: knowledgeSearchName, search },
  };
}
