import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { retrieve } from "../src/knowledge/retrieve.ts";
import type { RunRecord } from "../src/store/run-records.ts";

const run = (knowledgeBaseIds: string[]) =>
  ({ id: "run-1", organizationId: "org-1", createdBy: "user-1", knowledgeBaseIds }) as unknown as RunRecord;

const entry = (kb: string, asset: string, index: number, score: number) => ({
  score,
  artifactJson: JSON.stringify({
    type: "TextArtifact",
    id: `${kb}-${index}`,
    reference: null,
    meta: { knowledge_base_id: kb, bucket_id: "bucket-1", asset_name: asset, chunk_index: index },
    name: asset,
    value: `${asset} chunk ${index}`,
  }),
});

/** The knowledge service as a run sees it: each knowledge base's answer, or its failure; the calls it got. */
function knowledgeService(answers: Record<string, ReturnType<typeof entry>[] | ConnectError>) {
  const calls: Array<{ knowledgeBaseId: string; query: string; count?: number }> = [];
  const client = {
    queryKnowledgeBase: async (req: { knowledgeBaseId: string; query: string; count?: number }) => {
      calls.push(req);
      const answer = answers[req.knowledgeBaseId]!;
      if (answer instanceof ConnectError) throw answer;
      return { knowledgeBaseQuery: { entries: answer } };
    },
  };
  return { client: client as never, calls };
}

describe("a run's retrieval", () => {
  it("asks each knowledge base for 5 chunks and merges the hits by score", async () => {
    const { client, calls } = knowledgeService({
      a: [entry("a", "one.txt", 0, 0.5), entry("a", "one.txt", 1, 0.2)],
      b: [entry("b", "two.txt", 3, 0.9)],
    });
    const found = await retrieve(client, run(["a", "b"]), "the question", new AbortController().signal);
    expect(calls.map((c) => [c.knowledgeBaseId, c.query, c.count])).toEqual([
      ["a", "the question", 5],
      ["b", "the question", 5],
    ]);
    expect(found.passages.map((p) => [p.knowledgeBaseId, p.assetName, p.chunkIndex, p.score])).toEqual([
      ["b", "two.txt", 3, 0.9],
      ["a", "one.txt", 0, 0.5],
      ["a", "one.txt", 1, 0.2],
    ]);
    expect(found.notes.map((n) => n.type)).toEqual(["AssistantRunKnowledgeRetrieval"]);
  });

  it("a knowledge base that fails is left out and reported; the others still answer", async () => {
    const { client } = knowledgeService({
      gone: new ConnectError("knowledge base gone not found", Code.NotFound),
      kept: [entry("kept", "one.txt", 0, 0.4)],
    });
    const found = await retrieve(client, run(["gone", "kept"]), "q", new AbortController().signal);
    expect(found.passages.map((p) => p.knowledgeBaseId)).toEqual(["kept"]);
    expect(found.notes).toEqual([
      {
        type: "AssistantRunKnowledgeRetrieval",
        payload: {
          query: "q",
          knowledge_base_ids: ["gone", "kept"],
          hits: [
            { knowledge_base_id: "kept", bucket_id: "bucket-1", asset_name: "one.txt", chunk_index: 0, score: 0.4 },
          ],
        },
      },
      {
        type: "AssistantRunKnowledgeBaseUnavailable",
        payload: { knowledge_base_id: "gone", error: "knowledge base gone not found" },
      },
    ]);
  });

  it("no knowledge base, no call", async () => {
    const { client, calls } = knowledgeService({});
    expect(await retrieve(client, run([]), "q", new AbortController().signal)).toEqual({ passages: [], notes: [] });
    expect(calls).toEqual([]);
  });
});
