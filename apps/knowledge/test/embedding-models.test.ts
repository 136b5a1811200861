import { loadConfig } from "@loom/runtime/config";
import { describe, expect, it } from "vitest";
import { knowledgeConfigSchema } from "../src/config.ts";
import { embeddingModelNames } from "../src/embedding-models.ts";

describe("the embedding models knowledge bases may pick (EMBEDDING_MODELS)", () => {
  it("none when unset or empty: keyword search only", () => {
    expect(embeddingModelNames({})).toEqual([]);
    expect(embeddingModelNames({ EMBEDDING_MODELS: " , " })).toEqual([]);
  });

  it("lists the names, trimmed, each once, when their providers are configured", () => {
    expect(
      embeddingModelNames({
        EMBEDDING_MODELS: "openai:text-embedding-3-small, openai-compatible:bge-small-en,openai:text-embedding-3-small",
        OPENAI_API_KEY: "sk-test",
        OPENAI_COMPATIBLE_BASE_URL: "http://127.0.0.1:11434/v1",
      }),
    ).toEqual(["openai:text-embedding-3-small", "openai-compatible:bge-small-en"]);
  });

  it.each(["text-embedding-3-small", "anthropic:claude", "openai:", ":m", "loom:echo"])(
    "refuses the start for %s, saying the shape and the providers",
    (name) => {
      expect(() => embeddingModelNames({ EMBEDDING_MODELS: name, OPENAI_API_KEY: "k" })).toThrow(
        /EMBEDDING_MODELS: .* is not "provider:model" with provider openai or openai-compatible/,
      );
    },
  );

  it("refuses the start for a model whose provider is not configured, naming the setting", () => {
    expect(() => embeddingModelNames({ EMBEDDING_MODELS: "openai:text-embedding-3-small" })).toThrow(
      "OPENAI_API_KEY: must be set for the embedding model openai:text-embedding-3-small (EMBEDDING_MODELS)",
    );
    expect(() => embeddingModelNames({ EMBEDDING_MODELS: "openai-compatible:bge", OPENAI_API_KEY: "k" })).toThrow(
      /OPENAI_COMPATIBLE_BASE_URL: must be set/,
    );
  });

  it("the service on its own needs STORAGE_URL: it asks storage about the buckets a knowledge base names", () => {
    expect(() => loadConfig(knowledgeConfigSchema, { SERVICE_TOKEN: "t".repeat(24) })).toThrow(/STORAGE_URL/);
    const config = loadConfig(knowledgeConfigSchema, {
      SERVICE_TOKEN: "t".repeat(24),
      STORAGE_URL: "http://storage:8085",
    });
    expect(config.PORT).toBe(8087);
    expect(config.MONGODB_DB).toBe("loom_knowledge");
  });
});
