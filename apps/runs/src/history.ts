import type { ArtifactIdentity } from "./griptape.ts";
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
  return storedTurn(stored).text;
}

/** A stored input or output as a turn: its text (`textOf`), and the id and name of the TextArtifact it is, if it is one. */
function storedTurn(stored: string): { text: string; artifact?: ArtifactIdentity } {
  // Only an object can be an artifact: other strings skip the parse (and the cost of its exception).
  if (!artifactLike.test(stored)) return { text: stored };
  let parsed: unknown;
  try {
    parsed = JSON.parse(stored);
  } catch {
    return { text: stored };
  }
  const text = artifactText(parsed) ?? stored;
  const { type, id, name } = parsed as { type?: unknown; id?: unknown; name?: unknown };
  return type === "TextArtifact" && typeof id === "string" && typeof name === "string"
    ? { text, artifact: { id, name } }
    : { text };
}

/**
 * A turn of the prompt. `artifact`: the stored TextArtifact's id and name,
 * which the run's StartPromptEvent shows as griptape's own memory does (it
 * puts the stored artifacts themselves in the prompt stack).
 */
export type HistoryTurn = ChatTurn & { artifact?: ArtifactIdentity };

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
export function historyTurns(messages: MessageTexts[], window: HistoryWindow): HistoryTurn[] {
  let budget = window.maxTokens * charactersPerToken;
  const kept: HistoryTurn[][] = [];
  for (let i = messages.length - 1; i >= 0 && kept.length < window.maxMessages; i--) {
    const user = storedTurn(messages[i]!.input);
    const assistant = storedTurn(messages[i]!.output);
    budget -= user.text.length + assistant.text.length;
    if (budget < 0) break;
    kept.push([turn("user", user), turn("assistant", assistant)]);
  }
  return kept.reverse().flat();
}

const turn = (
  role: "user" | "assistant",
  { text, artifact }: { text: string; artifact?: ArtifactIdentity },
): HistoryTurn => (artifact === undefined ? { role, content: text } : { role, content: text, artifact });
