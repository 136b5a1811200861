import { isTerminal, terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { answer, callTools, type FakeOpenAI, inTurn, startFakeOpenAI } from "@loom/testing/fake-openai";
import type { ApiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

/** The text the scripted model received in its request's system messages. */
const systemText = (body: any): string =>
  body.messages
    .filter((m: any) => m.role === "system")
    .map((m: any) => (typeof m.content === "string" ? m.content : m.content.map((p: any) => p.text).join("")))
    .join("\n");

describe.each(storeKinds("runs that know"))("runs that know (%s store)", (store) => {
  let stack: TestStack;
  let model: FakeOpenAI;
  let admin: ApiClient;
  let stranger: ApiClient;
  let kbId: string;
  let assistantId: string;

  async function upload(client: ApiClient, bucket: string, name: string, text: string) {
    await client.put(`/buckets/${bucket}/assets`, { name });
    const { url } = (await client.post(`/buckets/${bucket}/asset-urls/${name}`, { operation: "PUT" })).body;
    const res = await fetch(url, { method: "PUT", body: text, headers: { "content-type": "text/plain" } });
    expect(res.status).toBe(200);
  }

  /** A keyword knowledge base over a bucket of `files`, ingested (its job SUCCEEDED). */
  async function ingestedKnowledgeBase(client: ApiClient, files: Record<string, string>) {
    const bucketId = (await client.post("/buckets", { name: "handbook" })).body.bucket_id as string;
    for (const [name, text] of Object.entries(files)) await upload(client, bucketId, name, text);
    const kb = (
      await client.post("/knowledge-bases", {
        name: "Handbook",
        config: { gtc_pg_vector: { embedding_model: null } },
        asset_paths: [`${bucketId}/`],
      })
    ).body.knowledge_base_id as string;
    const job = (await client.post(`/knowledge-bases/${kb}/knowledge-base-jobs`)).body;
    await vi.waitFor(
      async () =>
        expect((await client.get(`/knowledge-base-jobs/${job.knowledge_base_job_id}`)).body.status).toBe("SUCCEEDED"),
      { timeout: 15_000, interval: 100 },
    );
    return { kb, bucketId };
  }

  async function settled(runId: string) {
    let result: { run: any; events: any[] } = { run: undefined, events: [] };
    await vi.waitFor(
      async () => {
        const run = (await admin.get(`/assistant-runs/${runId}`)).body;
        const events = (await admin.get(`/assistant-runs/${runId}/events?offset=0&limit=1000`)).body.events;
        expect(isTerminal(run.status), `run ${runId} is ${run.status}`).toBe(true);
        expect(terminalLifecycleEvents.has(events.at(-1)?.type ?? "")).toBe(true);
        result = { run, events };
      },
      { timeout: 10_000, interval: 20 },
    );
    return result;
  }
  const payloadsOf = (events: any[], type: string) => events.filter((e) => e.type === type).map((e) => e.payload);
  const countQueries = async (kb: string) =>
    (await admin.get(`/knowledge-bases/${kb}/queries`)).body.pagination.total_count as number;

  let bucketId: string;
  beforeAll(async () => {
    model = await startFakeOpenAI();
    stack = await startStack(store, {
      runs: { DEFAULT_MODEL: "openai-compatible:fake-model", OPENAI_COMPATIBLE_BASE_URL: model.baseUrl },
    });
    ({ admin, stranger } = await organizationClients(stack, `kb-runs-stranger-${store}`));
    ({ kb: kbId, bucketId } = await ingestedKnowledgeBase(admin, {
      "gateway.txt": "The Umbermark gateway listens on port 7431 behind the north proxy.",
      "leave.txt": "Holiday requests go to the people team two weeks ahead.",
    }));
    assistantId = (await admin.post("/assistants", { name: "knowing", knowledge_base_ids: [kbId] })).body
      .assistant_id as string;
  });
  afterAll(async () => {
    await stack?.close();
    await model?.close();
  });
  beforeEach(() => {
    model.requests.splice(0);
    model.reply(answer("Port 7431 [1]."));
  });

  it("searches the run's knowledge base for its input: the chunk reaches the model, the output's meta cites it, an event shows the retrieval", async () => {
    const question = "Which port does the Umbermark gateway listen on?";
    const res = await admin.post(`/assistants/${assistantId}/runs`, { input: question });
    expect(res.status).toBe(201);
    const { run, events } = await settled(res.body.assistant_run_id);
    expect(run.status).toBe("SUCCEEDED");
    expect(model.requests).toHaveLength(1);
    const system = systemText(model.requests[0]!.body);
    expect(system).toContain("retrieved");
    expect(system).toContain("[1] (source: gateway.txt, chunk 0)\nThe Umbermark gateway listens on port 7431");
    expect(run.output.value).toBe("Port 7431 [1].");
    expect(run.output.meta.citations[0]).toMatchObject({
      knowledge_base_id: kbId,
      bucket_id: bucketId,
      asset_name: "gateway.txt",
      chunk_index: 0,
    });
    const [retrieval] = payloadsOf(events, "AssistantRunKnowledgeRetrieval");
    expect(retrieval.query).toBe(question);
    expect(retrieval.knowledge_base_ids).toEqual([kbId]);
    expect(retrieval.hits[0]).toMatchObject({ knowledge_base_id: kbId, asset_name: "gateway.txt", chunk_index: 0 });
    expect(retrieval.hits[0].score).toBeGreaterThan(0);
    expect(events.find((e) => e.type === "AssistantRunKnowledgeRetrieval").origin).toBe("SYSTEM");
  });

  it("offers the model a search tool: its own query's passages are its result, cited and shown like the first search", async () => {
    model.reply(
      inTurn(
        callTools([{ id: "call_k", name: "knowledge_search", arguments: { query: "holiday requests people team" } }]),
        answer("Two weeks ahead [1]."),
      ),
    );
    const res = await admin.post(`/assistants/${assistantId}/runs`, { input: "Umbermark gateway port and leave?" });
    const { run, events } = await settled(res.body.assistant_run_id);
    expect(run.status).toBe("SUCCEEDED");
    expect(model.requests).toHaveLength(2);
    const offered = model.requests[0]!.body.tools.map((t: any) => t.function);
    expect(offered.map((t: any) => t.name)).toContain("knowledge_search");
    const result = model.requests[1]!.body.messages.find((m: any) => m.role === "tool");
    expect(result.tool_call_id).toBe("call_k");
    expect(result.content).toContain("(source: leave.txt, chunk 0)\nHoliday requests go to the people team");
    expect(run.output.meta.citations.map((c: any) => c.asset_name)).toContain("leave.txt");
    const searches = payloadsOf(events, "AssistantRunKnowledgeRetrieval");
    expect(searches.map((s) => s.query)).toEqual(["Umbermark gateway port and leave?", "holiday requests people team"]);
    const [finished] = payloadsOf(events, "FinishActionsSubtaskEvent");
    expect(finished.subtask_actions[0]).toMatchObject({ tag: "call_k", name: "KnowledgeBases", path: "search" });
  });

  it("a run with no knowledge base makes no knowledge call and cites nothing", async () => {
    const plain = (await admin.post("/assistants", { name: "plain" })).body.assistant_id as string;
    const before = await countQueries(kbId);
    const res = await admin.post(`/assistants/${plain}/runs`, { input: "Which port does Umbermark use?" });
    const { run, events } = await settled(res.body.assistant_run_id);
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output.meta).toEqual({});
    expect(payloadsOf(events, "AssistantRunKnowledgeRetrieval")).toEqual([]);
    expect(systemText(model.requests[0]!.body)).not.toContain("Umbermark");
    expect(await countQueries(kbId)).toBe(before);
  });

  it("another organization's knowledge base cannot be named by a run, and its chunks never reach one", async () => {
    const foreign = await ingestedKnowledgeBase(stranger, {
      "secret.txt": "The Umbermark gateway secretly also listens on port 9999.",
    });
    const res = await admin.post(`/assistants/${assistantId}/runs`, {
      input: "Which port does the Umbermark gateway listen on?",
      additional_knowledge_base_ids: [foreign.kb],
    });
    expectError(res, 400, "ValidationError");
    const strangers = (await stranger.post("/assistants", { name: "theirs" })).body.assistant_id as string;
    const theirs = await stranger.post(`/assistants/${strangers}/runs`, { input: "x", knowledge_base_ids: [kbId] });
    expectError(theirs, 400, "ValidationError");
    // The admin's run with its own knowledge base sees its own chunk, never the other organization's.
    const mine = await admin.post(`/assistants/${assistantId}/runs`, { input: "Umbermark gateway port" });
    const { run } = await settled(mine.body.assistant_run_id);
    expect(run.status).toBe("SUCCEEDED");
    const sent = JSON.stringify(model.requests.map((r) => r.body));
    expect(sent).toContain("7431");
    expect(sent).not.toContain("9999");
  });
});
