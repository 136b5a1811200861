import { ConfigError, loadConfig } from "@loom/runtime/config";
import { answer, type FakeOpenAI, startFakeOpenAI } from "@loom/testing/fake-openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { modelSettings, resolveModel } from "../src/models/resolve.ts";

const signal = new AbortController().signal;

describe("resolveModel", () => {
  let server: FakeOpenAI;
  beforeAll(async () => {
    server = await startFakeOpenAI();
  });
  afterAll(() => server?.close());

  it("is loom:echo when nothing is configured (empty counts as unset)", async () => {
    expect(resolveModel({}).id).toBe("loom:echo");
    const model = resolveModel({ DEFAULT_MODEL: "", OPENAI_API_KEY: "" });
    expect(model.id).toBe("loom:echo");
    expect((await model.generate({ messages: [{ role: "user", content: "hi" }], signal })).text).toBe("Echo: hi");
  });

  it("is loom:echo when asked for, even with a provider configured", () => {
    expect(resolveModel({ DEFAULT_MODEL: "loom:echo", OPENAI_API_KEY: "sk-x" }).id).toBe("loom:echo");
  });

  it.each([
    ["OPENAI_API_KEY", "sk-x"],
    ["ANTHROPIC_API_KEY", "sk-ant-x"],
    ["OPENAI_COMPATIBLE_BASE_URL", "http://127.0.0.1:11434/v1"],
  ])("never guesses a model: %s without DEFAULT_MODEL is a config error", (key, value) => {
    const resolve = () => resolveModel({ [key]: value });
    expect(resolve).toThrow(ConfigError);
    expect(resolve).toThrow(/DEFAULT_MODEL: must be set/);
    expect(resolve).toThrow(key);
  });

  it("rejects an unknown provider, naming it", () => {
    expect(() => resolveModel({ DEFAULT_MODEL: "mistral:large" })).toThrow(ConfigError);
    expect(() => resolveModel({ DEFAULT_MODEL: "mistral:large" })).toThrow(/unknown model provider "mistral"/);
  });

  it.each(["gpt-4.1-mini", "openai:", ":gpt", "loom:parrot"])("rejects the malformed name %j", (name) => {
    expect(() => resolveModel({ DEFAULT_MODEL: name })).toThrow(/^DEFAULT_MODEL: /);
  });

  it.each([
    ["openai:gpt-4.1-mini", "OPENAI_API_KEY"],
    ["anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"],
    ["openai-compatible:llama3", "OPENAI_COMPATIBLE_BASE_URL"],
  ])("%s needs %s", (name, key) => {
    expect(() => resolveModel({ DEFAULT_MODEL: name })).toThrow(new RegExp(`^${key}: must be set`));
  });

  it("resolves openai and anthropic models with their keys", () => {
    expect(resolveModel({ DEFAULT_MODEL: "openai:gpt-4.1-mini", OPENAI_API_KEY: "sk-x" }).id).toBe(
      "openai:gpt-4.1-mini",
    );
    expect(resolveModel({ DEFAULT_MODEL: "anthropic:claude-sonnet-4-5", ANTHROPIC_API_KEY: "sk-ant-x" }).id).toBe(
      "anthropic:claude-sonnet-4-5",
    );
  });

  it("resolves openai-compatible:<model> against its base URL, with its key", async () => {
    server.reply(answer("From the local model."));
    const model = resolveModel({
      DEFAULT_MODEL: "openai-compatible:foo",
      OPENAI_COMPATIBLE_BASE_URL: server.baseUrl,
      OPENAI_COMPATIBLE_API_KEY: "local-key",
    });
    expect(model.id).toBe("openai-compatible:foo");
    const result = await model.generate({ messages: [{ role: "user", content: "hi" }], signal, onChunk: () => {} });
    expect(result).toEqual({ text: "From the local model.", inputTokens: 11, outputTokens: 7 });
    const request = server.requests.at(-1)!;
    expect(request.body.model).toBe("foo");
    expect(request.headers.authorization).toBe("Bearer local-key");
  });
});

describe("modelSettings in a service's config", () => {
  const schema = z.object({ ...modelSettings });

  it("reads the variables, all optional (loom:echo's streaming pace 20 ms unless set)", () => {
    expect(loadConfig(schema, {})).toEqual({ ECHO_TOKEN_INTERVAL_MS: 20 });
    expect(
      loadConfig(schema, {
        DEFAULT_MODEL: "openai-compatible:qwen",
        OPENAI_COMPATIBLE_BASE_URL: "http://ollama:11434/v1",
        ECHO_TOKEN_INTERVAL_MS: "0",
      }),
    ).toEqual({
      DEFAULT_MODEL: "openai-compatible:qwen",
      OPENAI_COMPATIBLE_BASE_URL: "http://ollama:11434/v1",
      ECHO_TOKEN_INTERVAL_MS: 0,
    });
    expect(() => loadConfig(schema, { ECHO_TOKEN_INTERVAL_MS: "-1" })).toThrow(/ECHO_TOKEN_INTERVAL_MS/);
  });

  it("fails at start on a bad model name or URL, naming the variable", () => {
    expect(() => loadConfig(schema, { DEFAULT_MODEL: "mistral:large" })).toThrow(
      /DEFAULT_MODEL: unknown model provider "mistral"/,
    );
    expect(() => loadConfig(schema, { OPENAI_BASE_URL: "not a url" })).toThrow(/OPENAI_BASE_URL/);
  });
});
