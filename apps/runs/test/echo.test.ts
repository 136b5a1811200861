import { describe, expect, it } from "vitest";
import { createEchoModel } from "../src/models/echo.ts";
import type { ChatTurn } from "../src/models/port.ts";

const conversation: ChatTurn[] = [
  { role: "system", content: "You are helpful." },
  { role: "user", content: "first question" },
  { role: "assistant", content: "first answer" },
  { role: "user", content: "What is the weather like today?" },
];

describe("loom:echo", () => {
  const model = createEchoModel();
  const signal = new AbortController().signal;

  it("answers the last user message, the same way every time", async () => {
    const first = await model.generate({ messages: conversation, signal });
    const second = await model.generate({ messages: conversation, signal });
    expect(model.id).toBe("loom:echo");
    expect(first.text).toBe("Echo: What is the weather like today?");
    expect(second).toEqual(first);
    expect(first.inputTokens).toBeGreaterThan(0);
    expect(first.outputTokens).toBeGreaterThan(0);
  });

  it("streams the answer in several chunks, in order, whose concatenation is the answer", async () => {
    const chunks: string[] = [];
    const result = await model.generate({
      messages: conversation,
      signal,
      onChunk: (token) => void chunks.push(token),
    });
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    expect(chunks.join("")).toBe(result.text);
    expect(chunks.slice(0, 3)).toEqual(["Echo", ":", " What"]);
    expect(result.outputTokens).toBe(chunks.length);
    expect(result).toEqual(await model.generate({ messages: conversation, signal }));
  });

  it("streams at ECHO_TOKEN_INTERVAL_MS's pace, and answers unstreamed at once", async () => {
    const paced = createEchoModel(40);
    const times: number[] = [];
    const started = performance.now();
    await paced.generate({ messages: conversation, signal, onChunk: () => void times.push(performance.now()) });
    // "Echo", ":", " What", " is", " the", " weather", " like", " today", "?": a wait before each.
    expect(times.length).toBe(9);
    const gaps = times.map((t, i) => t - (i === 0 ? started : times[i - 1]!));
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(35);
    const at = performance.now();
    await paced.generate({ messages: conversation, signal });
    expect(performance.now() - at).toBeLessThan(35);
  });

  it("streams even a one-word question in at least 3 chunks", async () => {
    const chunks: string[] = [];
    await model.generate({
      messages: [{ role: "user", content: "hi" }],
      signal,
      onChunk: (token) => void chunks.push(token),
    });
    expect(chunks).toEqual(["Echo", ":", " hi"]);
  });

  it("counts input tokens over every message", async () => {
    const one = await model.generate({ messages: conversation.slice(-1), signal });
    const all = await model.generate({ messages: conversation, signal });
    expect(all.inputTokens).toBeGreaterThan(one.inputTokens);
  });

  it("stops between chunks when aborted, rejecting with the abort", async () => {
    const controller = new AbortController();
    const chunks: string[] = [];
    const run = model.generate({
      messages: conversation,
      signal: controller.signal,
      onChunk: (token) => {
        chunks.push(token);
        if (chunks.length === 2) controller.abort();
      },
    });
    await expect(run).rejects.toMatchObject({ name: "AbortError" });
    expect(chunks).toHaveLength(2);
  });

  it("rejects with the abort's own reason, so the worker can tell why it stopped", async () => {
    const controller = new AbortController();
    const reason = new Error("run cancelled");
    controller.abort(reason);
    await expect(model.generate({ messages: conversation, signal: controller.signal })).rejects.toBe(reason);
  });
});
