import { type Client, ConnectError } from "@connectrpc/connect";
import type { KnowledgeBaseQueriesService } from "@loom/proto/knowledge/v1/knowledge_base_queries_pb";
import { headersFor } from "@loom/server/principal";
import type { RunRecord } from "../store/run-records.ts";

/** How many chunks a run asks of each of its knowledge bases (docs/decisions.md, "Runs that know"). */
export const passagesPerKnowledgeBase = 5;

/** A chunk found for a run: its text, its score and where it came from (a citation of the run's output). */
export interface Passage {
  knowledgeBaseId: string;
  bucketId: string;
  assetName: string;
  chunkIndex: number;
  score: number;
  text: string;
}

/** What a run's search found: the passages, best first, and its SYSTEM events (the retrieval, each failure). */
export interface Retrieval {
  passages: Passage[];
  notes: Array<{ type: string; payload: object }>;
}

export const noRetrieval: Retrieval = { passages: [], notes: [] };

/**
 * Searches each of the run's knowledge bases for `query` through the
 * knowledge service, acting as the run's creator (so only its organization's
 * knowledge bases answer), all at once, and merges the hits by score. A
 * knowledge base that fails (deleted meanwhile, its provider down) is left
 * out and reported: the run goes on with the others. No knowledge base, no
 * call. A stop of the run (`signal`) rejects with its reason.
 */
export async function retrieve(
  queries: Client<typeof KnowledgeBaseQueriesService>,
  run: RunRecord,
  query: string,
  signal: AbortSignal,
): Promise<Retrieval> {
  if (run.knowledgeBaseIds.length === 0) return noRetrieval;
  const headers = headersFor({ userId: run.createdBy, organizationId: run.organizationId });
  const answers = await Promise.all(
    run.knowledgeBaseIds.map(async (knowledgeBaseId) => {
      try {
        const answer = await queries.queryKnowledgeBase(
          { knowledgeBaseId, query, count: passagesPerKnowledgeBase },
          { headers, signal },
        );
        const entries = answer.knowledgeBaseQuery?.entries ?? [];
        return { knowledgeBaseId, passages: entries.flatMap((e) => passageOf(knowledgeBaseId, e)) };
      } catch (error) {
        signal.throwIfAborted();
        return { knowledgeBaseId, failure: error instanceof ConnectError ? error.rawMessage : String(error) };
      }
    }),
  );
  const passages = answers.flatMap((a) => a.passages ?? []).sort((a, b) => b.score - a.score);
  const failures = answers.flatMap((a) => (a.failure === undefined ? [] : [a]));
  return {
    passages,
    notes: [
      {
        type: "AssistantRunKnowledgeRetrieval",
        payload: {
          query,
          knowledge_base_ids: run.knowledgeBaseIds,
          hits: passages.map((p) => ({ ...citationOf(p), score: p.score })),
        },
      },
      ...failures.map(({ knowledgeBaseId, failure }) => ({
        type: "AssistantRunKnowledgeBaseUnavailable",
        payload: { knowledge_base_id: knowledgeBaseId, error: failure },
      })),
    ],
  };
}

/** A passage as the run's output cites it (docs/api.md, "Assistant runs"). */
export function citationOf(p: Passage) {
  return {
    knowledge_base_id: p.knowledgeBaseId,
    bucket_id: p.bucketId,
    asset_name: p.assetName,
    chunk_index: p.chunkIndex,
  };
}

/**
 * The passages as a system instruction: said to be retrieved, each numbered
 * with its source, so that the model answers from them and can name them.
 */
export function passagesInstruction(passages: Passage[]): string {
  return [
    "The passages below were retrieved from the knowledge bases of this conversation for the user's message.",
    "Answer from them where they are relevant, and name the passages you use by their numbers.",
    "",
    numberedPassages(passages),
  ].join("\n");
}

/** Each passage numbered with its source, then its text. */
export function numberedPassages(passages: Passage[]): string {
  return passages.map((p, i) => `[${i + 1}] (source: ${p.assetName}, chunk ${p.chunkIndex})\n${p.text}`).join("\n\n");
}

/** An entry's chunk, read from its TextArtifact (its `meta` names the asset and position); one unreadable is skipped. */
function passageOf(knowledgeBaseId: string, entry: { score: number; artifactJson: string }): Passage[] {
  try {
    const artifact = JSON.parse(entry.artifactJson) as {
      value?: unknown;
      meta?: { bucket_id?: unknown; asset_name?: unknown; chunk_index?: unknown };
    };
    const meta = artifact.meta ?? {};
    if (typeof artifact.value !== "string") return [];
    return [
      {
        knowledgeBaseId,
        bucketId: typeof meta.bucket_id === "string" ? meta.bucket_id : "",
        assetName: typeof meta.asset_name === "string" ? meta.asset_name : "",
        chunkIndex: typeof meta.chunk_index === "number" ? meta.chunk_index : 0,
        score: entry.score,
        text: artifact.value,
      },
    ];
  } catch {
    return [];
  }
}
