import { ConfigError, env } from "@loom/runtime/config";
import { z } from "zod";

/** The AI SDK providers with embedding models Loom can call (Anthropic has none). */
const providers = ["openai", "openai-compatible"] as const;
type Provider = (typeof providers)[number];

/** The setting each provider needs before a model of it can embed anything. */
const requiredSetting: Record<Provider, "OPENAI_API_KEY" | "OPENAI_COMPATIBLE_BASE_URL"> = {
  openai: "OPENAI_API_KEY",
  "openai-compatible": "OPENAI_COMPATIBLE_BASE_URL",
};

/**
 * The embedding models knowledge bases may pick, and the provider settings
 * they use (the same variables the runs service reads for its models).
 */
export const embeddingSettings = {
  /**
   * Comma-separated `provider:model` names (`openai:text-embedding-3-small`,
   * `openai-compatible:bge-small-en`); unset: none, every knowledge base is
   * searched by keywords only.
   */
  EMBEDDING_MODELS: z.string().optional(),
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_BASE_URL: env.url().optional(),
  OPENAI_COMPATIBLE_BASE_URL: env.url().optional(),
  OPENAI_COMPATIBLE_API_KEY: z.string().optional(),
};

export type EmbeddingSettings = { [K in keyof typeof embeddingSettings]?: string | undefined };

/**
 * The names EMBEDDING_MODELS lists, each checked: a known provider, a model
 * name, and the provider's setting present. Throws ConfigError naming the
 * variable to fix, so the service fails at start rather than an ingest later.
 */
export function embeddingModelNames(settings: EmbeddingSettings): string[] {
  const names = (settings.EMBEDDING_MODELS ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  for (const name of names)
    checkProviderModel(name, settings, {
      variable: "EMBEDDING_MODELS",
      role: "embedding model",
      example: ' (e.g. "openai:text-embedding-3-small")',
    });
  return [...new Set(names)];
}

/**
 * Checks one `provider:model` name a setting gives (EMBEDDING_MODELS, KNOWLEDGE_SEARCH_MODEL): a known provider, a
 * model name, and the provider's setting present. Throws ConfigError naming the variable to fix.
 */
export function checkProviderModel(
  name: string,
  settings: EmbeddingSettings,
  { variable, role, example = "" }: { variable: string; role: string; example?: string },
): void {
  const colon = name.indexOf(":");
  const provider = providers.find((known) => known === name.slice(0, colon));
  if (colon <= 0 || colon === name.length - 1 || provider === undefined)
    throw new ConfigError(
      `${variable}: "${name}" is not "provider:model" with provider ${providers.join(" or ")}${example}`,
    );
  const setting = requiredSetting[provider];
  if ((settings[setting] ?? "").trim() === "")
    throw new ConfigError(`${setting}: must be set for the ${role} ${name} (${variable})`);
}
