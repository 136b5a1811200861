import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { unavailable } from "@loom/contracts/errors";
import { ConfigError } from "@loom/runtime/config";
import { generateText, type LanguageModel } from "ai";
import { z } from "zod";
import type { EmbeddingSettings } from "../embedding-models.ts";

/** The model that writes a search's answer: one per deployment (docs/decisions.md, "Querying knowledge bases"). */
export const searchSettings = {
  /**
   * `provider:model` (`openai:gpt-4o-mini`, `openai-compatible:llama3`), with the provider's settings as for
   * EMBEDDING_MODELS; unset: searches are refused (503), queries still work.
   */
  KNOWLEDGE_SEARCH_MODEL: z.string().optional(),
};

export type SearchSettings = EmbeddingSettings & { [K in keyof typeof searchSettings]?: string | undefined };

/** Writes an answer to `query` from the chunks' texts. */
export type AnswerFromChunks = (query: string, chunks: readonly string[]) => Promise<{ model: string; text: string }>;

const instructions =
  "Answer the question from the numbered passages of the knowledge base only. Cite the passages you use by their " +
  "numbers in brackets, like [1]. If the passages do not hold the answer, say that the knowledge base does not say.";

function languageModel(name: string, settings: SearchSettings): LanguageModel {
  const colon = name.indexOf(":");
  const provider = name.slice(0, colon);
  const model = name.slice(colon + 1);
  const setting = provider === "openai" ? "OPENAI_API_KEY" : "OPENAI_COMPATIBLE_BASE_URL";
  if (colon <= 0 || colon === name.length - 1 || (provider !== "openai" && provider !== "openai-compatible"))
    throw new ConfigError(
      `KNOWLEDGE_SEARCH_MODEL: "${name}" is not "provider:model" with provider openai or openai-compatible`,
    );
  if ((settings[setting] ?? "").trim() === "")
    throw new ConfigError(`${setting}: must be set for the search model ${name} (KNOWLEDGE_SEARCH_MODEL)`);
  // Keys are passed explicitly: the SDK would otherwise read process.env behind the settings' back.
  if (provider === "openai")
    return createOpenAI({ apiKey: settings.OPENAI_API_KEY, baseURL: settings.OPENAI_BASE_URL || undefined })(model);
  return createOpenAICompatible({
    name: "openai-compatible",
    baseURL: settings.OPENAI_COMPATIBLE_BASE_URL ?? "",
    apiKey: settings.OPENAI_COMPATIBLE_API_KEY || undefined,
  })(model);
}

/**
 * The search model from the settings, checked at start (a bad name or a missing provider setting is a ConfigError
 * naming the variable); none when KNOWLEDGE_SEARCH_MODEL is unset: then a search is UNAVAILABLE saying so.
 */
export function searchModel(settings: SearchSettings): AnswerFromChunks {
  const name = settings.KNOWLEDGE_SEARCH_MODEL?.trim();
  if (!name)
    return async () => {
      throw unavailable("no search model is configured (KNOWLEDGE_SEARCH_MODEL): use the query operation instead");
    };
  const model = languageModel(name, settings);
  return async (query, chunks) => {
    const passages = chunks.map((text, i) => `[${i + 1}] ${text}`).join("\n\n");
    try {
      const { text } = await generateText({
        model,
        system: instructions,
        prompt: `Passages:\n\n${passages || "(none found)"}\n\nQuestion: ${query}`,
        maxRetries: 1,
      });
      return { model: name, text };
    } catch (error) {
      throw unavailable(`the search model ${name} could not answer: ${(error as Error).message}`);
    }
  };
}
