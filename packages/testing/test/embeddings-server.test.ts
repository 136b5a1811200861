import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localEmbeddingModel, needsOwnServers, type OwnServer, startOwnEmbeddings } from "../src/own-servers.ts";

const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);

describe.skipIf(!needsOwnServers("local embeddings server", "embeddings"))("local embeddings server", () => {
  let server: OwnServer;
  beforeAll(async () => {
    server = await startOwnEmbeddings();
  });
  afterAll(() => server?.close());

  const embed = (body: unknown) =>
    fetch(`${server.url}/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("lists its one model", async () => {
    const models = await (await fetch(`${server.url}/models`)).json();
    expect(models).toMatchObject({ object: "list", data: [{ id: localEmbeddingModel.id, object: "model" }] });
  });

  it("puts sentences that mean the same closer than unrelated ones", async () => {
    const response = await embed({
      model: localEmbeddingModel.id,
      input: [
        "How do I reset my password?",
        "I forgot my login credentials and need to change them.",
        "The harbour freezes over every January.",
      ],
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      object: string;
      model: string;
      data: Array<{ object: string; index: number; embedding: number[] }>;
      usage: { prompt_tokens: number; total_tokens: number };
    };
    expect(body).toMatchObject({ object: "list", model: localEmbeddingModel.id });
    expect(body.data.map((d) => [d.object, d.index, d.embedding.length])).toEqual(
      [0, 1, 2].map((i) => ["embedding", i, 384]),
    );
    expect(body.usage.prompt_tokens).toBeGreaterThan(10);
    const [password, credentials, harbour] = body.data.map((d) => d.embedding) as [number[], number[], number[]];
    expect(cosine(password, password)).toBeCloseTo(1, 4);
    expect(cosine(password, credentials)).toBeGreaterThan(cosine(password, harbour) + 0.2);
    expect(cosine(credentials, password)).toBeGreaterThan(cosine(credentials, harbour) + 0.2);
  });

  it("gives a text the same vector alone, in a batch, and as base64 float32", async () => {
    const text = "Quarterly maintenance of the Halvorsen cluster starts at 02:00.";
    const alone = (
      (await (await embed({ model: localEmbeddingModel.id, input: text })).json()) as {
        data: Array<{ embedding: number[] }>;
      }
    ).data[0]!.embedding;
    const batch = (
      (await (
        await embed({ model: localEmbeddingModel.id, input: ["a short one", text, "x ".repeat(100)] })
      ).json()) as { data: Array<{ embedding: number[] }> }
    ).data[1]!.embedding;
    const encoded = (
      (await (await embed({ model: localEmbeddingModel.id, input: [text], encoding_format: "base64" })).json()) as {
        data: Array<{ embedding: string }>;
      }
    ).data[0]!.embedding;
    const bytes = Buffer.from(encoded, "base64");
    const decoded = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
    expect(cosine(alone, batch)).toBeGreaterThan(0.999);
    expect(decoded).toHaveLength(384);
    expect(cosine(alone, decoded)).toBeGreaterThan(0.999);
  });

  it("answers OpenAI's errors for an unknown model and a bad input, and counts only what it embedded", async () => {
    const stats = async () =>
      (await (await fetch(`${server.url.replace(/\/v1$/, "")}/stats`)).json()) as { requests: number; inputs: number };
    const before = await stats();
    const unknown = await embed({ model: "text-embedding-3-small", input: "hi" });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: "model_not_found", param: "model" } });
    const empty = await embed({ model: localEmbeddingModel.id, input: [] });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ error: { type: "invalid_request_error", param: "input" } });
    await embed({ model: localEmbeddingModel.id, input: ["one", "two"] });
    expect(await stats()).toEqual({ requests: before.requests + 1, inputs: before.inputs + 2 });
  });
});
