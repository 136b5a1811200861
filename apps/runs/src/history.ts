import type { ChatTurn } from "./models/port.ts";
import type { MessageTexts } from "./store/messages.ts";

/**
 * How much of its thread a run sees (docs/behaviour.md §5): at most
 * `maxMessages` messages and about `maxTokens` tokens of their text, the
 * newest kept, the oldest dropped first.
 */
export interface HistoryWindow {
  maxMessages: number;
  maxTokens: number;
}

/** The window's token approximation: a token is about four characters (of English text, for OpenAI's tokenizers). */
const charactersPerToken = 4;

const artifactLike = /^\s*\{/;

/**
 * What the model reads of a message's `input` or `output`: the text of a
 * griptape artifact stored as JSON (an object whose `type` ends in
 * "Artifact": its string `value`; a ListArtifact's items' texts, one a line),
 * else the string itself. Never the artifact's JSON.
 */
export function textOf(stored: string): string {
  // Only an object can be an artifact: other strings skip the parse (and the cost of its exception).
  if (!artifactLike.test(stored)) return stored;
  let parsed: unknown;
  try {
    parsed = JSON.parse(stored);
  } catch {
    return stored;
  }
  return artifactText(parsed) ?? stored;
}

function artifactText(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const artifact = value as { type?: unknown; value?: unknown };
  if (typeof artifact.type !== "string" || !artifact.type.endsWith("Artifact")) return undefined;
  if (artifact.type === "ListArtifact" && Array.isArray(artifact.value))
    return artifact.value.map((item) => artifactText(item) ?? "").join("\n");
  return typeof artifact.value === "string" ? artifact.value : undefined;
}

/**
 * A thread's messages (oldest first) as earlier turns: each a user turn and
 * an assistant turn, within the window. A message that does not fit the
 * token budget ends the history there (older ones are dropped with it).
 */
export function historyTurns(messages: MessageTexts[], window: HistoryWindow): ChatTurn[] {
  let budget = window.maxTokens * charactersPerToken;
  const kept: ChatTurn[][] = [];
  for (let i = messages.length - 1; i >= 0 && kept.length < window.maxMessages; i--) {
    const user = textOf(messages[i]!.input);
    const assistant = textOf(messages[i]!.output);
    budget -= user.length + assistant.length;
    if (budget < 0) break;
    kept.push([
      { role: "user", content: user },
      { role: "assistant", content: assistant },
    ]);
  }
  return kept.reverse().flat();
}
