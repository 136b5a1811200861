import { Code, ConnectError } from "@connectrpc/connect";
import { ConfigError } from "@loom/runtime/config";
import { describe, expect, it } from "vitest";
import { searchModel } from "../src/query/search-model.ts";

describe("the search model (KNOWLEDGE_SEARCH_MODEL)", () => {
  it("none configured: a search is UNAVAILABLE saying so, and the service still starts", async () => {
    const answer = searchModel({});
    const error = await answer("question", ["chunk"]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Unavailable);
    expect((error as ConnectError).rawMessage).toMatch(/KNOWLEDGE_SEARCH_MODEL/);
  });

  it.each([
    [{ KNOWLEDGE_SEARCH_MODEL: "gpt-4o" }, /KNOWLEDGE_SEARCH_MODEL: "gpt-4o" is not "provider:model"/],
    [{ KNOWLEDGE_SEARCH_MODEL: "anthropic:claude" }, /KNOWLEDGE_SEARCH_MODEL/],
    [{ KNOWLEDGE_SEARCH_MODEL: "openai:gpt-4o-mini" }, /OPENAI_API_KEY: must be set/],
    [{ KNOWLEDGE_SEARCH_MODEL: "openai-compatible:llama3" }, /OPENAI_COMPATIBLE_BASE_URL: must be set/],
  ])("refuses %j at start, naming the variable to fix", (settings, message) => {
    expect(() => searchModel(settings)).toThrow(ConfigError);
    expect(() => searchModel(settings)).toThrow(message);
  });
});
