import { describe, expect, it } from "vitest";
import { historyTurns, textOf } from "../src/history.ts";
import type { MessageRecord } from "../src/store/messages.ts";

const message = (input: string, output: string): MessageRecord => {
  const at = new Date();
  return {
    id: "m",
    organizationId: "o",
    threadId: "t",
    index: 0,
    input,
    output,
    metadata: {},
    createdBy: "u",
    createdAt: at,
    updatedAt: at,
  };
};

describe("a thread's history as the model reads it", () => {
  it("reads a griptape artifact's JSON as its text, and any other string as itself", () => {
    expect(textOf(JSON.stringify({ type: "TextArtifact", id: "x", value: "hello" }))).toBe("hello");
    expect(textOf(JSON.stringify({ type: "ErrorArtifact", value: "it broke" }))).toBe("it broke");
    const list = {
      type: "ListArtifact",
      value: [
        { type: "TextArtifact", value: "a" },
        { type: "TextArtifact", value: "b" },
      ],
    };
    expect(textOf(JSON.stringify(list))).toBe("a\nb");
    for (const raw of [
      "plain",
      "",
      "42",
      "[1, 2]",
      '{"value": "no type"}',
      '{"type": "Thing", "value": "x"}',
      '{"type": "BlobArtifact", "value": 1}',
      "{not json",
    ])
      expect(textOf(raw)).toBe(raw);
  });

  it("keeps the newest whole messages within the message and token bounds, oldest dropped first", () => {
    const messages = [message("a", "1"), message("bb", "22"), message("cc", "33")];
    const users = (window: { maxMessages: number; maxTokens: number }) =>
      historyTurns(messages, window)
        .filter((t) => t.role === "user")
        .map((t) => t.content);
    expect(historyTurns(messages, { maxMessages: 10, maxTokens: 100 })).toEqual([
      { role: "user", content: "a" },
      { role: "assistant", content: "1" },
      { role: "user", content: "bb" },
      { role: "assistant", content: "22" },
      { role: "user", content: "cc" },
      { role: "assistant", content: "33" },
    ]);
    expect(users({ maxMessages: 2, maxTokens: 100 })).toEqual(["bb", "cc"]);
    expect(users({ maxMessages: 10, maxTokens: 2 })).toEqual(["bb", "cc"]); // 8 characters: 4 + 4 fit, 2 more do not
    expect(users({ maxMessages: 10, maxTokens: 0 })).toEqual([]);
    expect(users({ maxMessages: 0, maxTokens: 100 })).toEqual([]);
  });
});
