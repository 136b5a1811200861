import { unavailable } from "@loom/contracts/errors";
import { loadOnce } from "@loom/runtime/load-once";
import { z } from "zod";
import { checkProviderModel, type EmbeddingSettings } from "../embedding-models.ts";

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
  checkProviderModel(name, settings, { variable: "KNOWLEDGE_SEARCH_MODEL", role: "search model" });
  // Loaded on the first search (docs/decisions.md, "Loading only what is used").
  const sdk = loadOnce(async () => {
    const [{ generateText }, { languageModel }] = await Promise.all([import("ai"), import("../providers.ts")]);
    return { generateText, model: languageModel(name, settings) };
  });
  return async (query, chunks) => {
    const { generateText, model } = await sdk();
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
