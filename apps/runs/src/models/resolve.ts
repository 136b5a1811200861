import { ConfigError, env } from "@loom/runtime/config";
import { loadOnce } from "@loom/runtime/load-once";
import type { LanguageModel } from "ai";
import { z } from "zod";
import { createEchoModel, echoModelId } from "./echo.ts";
import type { Model } from "./port.ts";
import type { ProviderConnection } from "./providers.ts";

const providers = ["loom", "openai", "anthropic", "openai-compatible"] as const;
type Provider = (typeof providers)[number];

const modelNameHint = `"provider:model" with provider ${providers.join(", ")} (e.g. "openai:gpt-4.1-mini")`;

/** The model settings, for a service to spread into its config schema (as identity does with its own). */
export const modelSettings = {
  /** Unset: loom:echo, but only when no provider below is configured. */
  DEFAULT_MODEL: z
    .string()
    .superRefine((value, ctx) => {
      const parsed = parseModelName(value);
      if ("problem" in parsed) ctx.addIssue({ code: "custom", message: parsed.problem });
    })
    .optional(),
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_BASE_URL: env.url().optional(),
  ANTHROPIC_API_KEY: z.string().optional(),
  ANTHROPIC_BASE_URL: env.url().optional(),
  /** Any endpoint that speaks OpenAI chat completions: Ollama, vLLM, LiteLLM… */
  OPENAI_COMPATIBLE_BASE_URL: env.url().optional(),
  OPENAI_COMPATIBLE_API_KEY: z.string().optional(),
  /**
   * Models CreateChatMessage may pick with `driver_configuration.model`, besides
   * DEFAULT_MODEL: comma-separated `provider:model` names.
   */
  CHAT_MODELS: z
    .string()
    .superRefine((value, ctx) => {
      for (const name of listed(value)) {
        const parsed = parseModelName(name);
        if ("problem" in parsed) ctx.addIssue({ code: "custom", message: parsed.problem });
      }
    })
    .optional(),
  /**
   * loom:echo's pace when its answer is streamed (a run with `stream: true`, a chat stream): the time between
   * two tokens, so a streaming client (the console's Chat) shows the answer arriving token by token offline, as
   * it would from a real model. 0: as fast as the event loop turns. Unstreamed answers never wait.
   */
  ECHO_TOKEN_INTERVAL_MS: z.coerce.number().int().min(0).max(10_000).default(20),
};

type NamedModelSettings = Exclude<keyof typeof modelSettings, "ECHO_TOKEN_INTERVAL_MS">;
export type ModelConfig = { [K in NamedModelSettings]?: string | undefined } & { ECHO_TOKEN_INTERVAL_MS?: number };

/** Settings that mean "a provider is configured": with any of them, DEFAULT_MODEL is required. */
const providerSettings = [
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_BASE_URL",
  "OPENAI_COMPATIBLE_BASE_URL",
  "OPENAI_COMPATIBLE_API_KEY",
] as const satisfies ReadonlyArray<keyof ModelConfig>;

/**
 * The model every run uses. Without DEFAULT_MODEL Loom falls back to loom:echo
 * only when nothing else is configured: with a provider key present we never
 * guess a model name (a guess costs money, or fails later and less clearly).
 * Throws ConfigError naming the variable to fix, so a service fails at start.
 */
export function resolveModel(config: ModelConfig, options: { maxRetries?: number } = {}): Model {
  const name = given(config.DEFAULT_MODEL);
  if (name === undefined) {
    const configured = providerSettings.filter((key) => given(config[key]) !== undefined);
    if (configured.length > 0) {
      throw new ConfigError(
        `DEFAULT_MODEL: must be set when a model provider is configured (${configured.join(", ")} set); use ${modelNameHint}`,
      );
    }
    return createEchoModel(config.ECHO_TOKEN_INTERVAL_MS);
  }
  const parsed = parseModelName(name);
  if ("problem" in parsed) throw new ConfigError(`DEFAULT_MODEL: ${parsed.problem}`);
  if (parsed.provider === "loom") return createEchoModel(config.ECHO_TOKEN_INTERVAL_MS);
  const id = `${parsed.provider}:${parsed.model}`;
  const model = languageModel(parsed.provider, parsed.model, config);
  const built = loadOnce(async () =>
    (await import("./ai-sdk.ts")).createAiSdkModel({ id, model: await model(), ...options }),
  );
  return { id, generate: async (request) => (await built()).generate(request) };
}

/** A model chat may use: loom:echo, or an AI SDK model (the SDK loaded on its first call). */
export type ChatModelEntry =
  | { id: string; echo: true }
  | { id: string; echo: false; model: () => Promise<LanguageModel> };

/**
 * The models chat may pick, by name: DEFAULT_MODEL (as resolveModel settles it)
 * first, then CHAT_MODELS. Each is built at start, so a missing key fails the
 * service at start rather than a request later.
 */
export function resolveChatModels(config: ModelConfig): Map<string, ChatModelEntry> {
  const defaultId = resolveModel(config).id;
  const models = new Map<string, ChatModelEntry>();
  for (const name of [defaultId, ...listed(config.CHAT_MODELS ?? "")]) {
    const parsed = parseModelName(name);
    if ("problem" in parsed) throw new ConfigError(`CHAT_MODELS: ${parsed.problem}`);
    const id = `${parsed.provider}:${parsed.model}`;
    if (models.has(id)) continue;
    models.set(
      id,
      parsed.provider === "loom"
        ? { id, echo: true }
        : { id, echo: false, model: languageModel(parsed.provider, parsed.model, config) },
    );
  }
  return models;
}

function listed(value: string): string[] {
  return value
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
}

/**
 * The model of a provider, its settings checked now (a missing one throws ConfigError at start); the AI SDK is
 * loaded on the model's first use (docs/decisions.md, "Loading only what is used").
 */
function languageModel(
  provider: Exclude<Provider, "loom">,
  model: string,
  config: ModelConfig,
): () => Promise<LanguageModel> {
  const connection: ProviderConnection =
    provider === "openai-compatible"
      ? {
          provider,
          baseURL: required(config, "OPENAI_COMPATIBLE_BASE_URL", provider),
          apiKey: given(config.OPENAI_COMPATIBLE_API_KEY),
        }
      : provider === "openai"
        ? { provider, apiKey: required(config, "OPENAI_API_KEY", provider), baseURL: given(config.OPENAI_BASE_URL) }
        : {
            provider,
            apiKey: required(config, "ANTHROPIC_API_KEY", provider),
            baseURL: given(config.ANTHROPIC_BASE_URL),
          };
  return loadOnce(async () => (await import("./providers.ts")).languageModel(connection, model));
}

function parseModelName(name: string): { provider: Provider; model: string } | { problem: string } {
  const colon = name.indexOf(":");
  if (colon <= 0 || colon === name.length - 1) return { problem: `"${name}" is not ${modelNameHint}` };
  const prefix = name.slice(0, colon);
  const provider = providers.find((known) => known === prefix);
  if (provider === undefined)
    return { problem: `unknown model provider "${prefix}" in "${name}"; known: ${providers.join(", ")}` };
  if (provider === "loom" && name !== echoModelId)
    return { problem: `unknown built-in model "${name}"; the only one is ${echoModelId}` };
  return { provider, model: name.slice(colon + 1) };
}

function required(config: ModelConfig, key: NamedModelSettings, provider: Provider): string {
  const value = given(config[key]);
  if (value === undefined)
    throw new ConfigError(`${key}: must be set for a model ${provider}:… (DEFAULT_MODEL or CHAT_MODELS)`);
  return value;
}

/** Empty means unset, as everywhere in Loom's configuration. */
function given(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}
