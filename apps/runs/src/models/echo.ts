import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import type { ChatTurn, GenerateRequest, GenerateResult, Model, ModelTurn } from "./port.ts";

/**
 * The built-in model: no network, no key, the same answer every time. It lets
 * Loom run (and its tests exercise streaming, events and cancel) with nothing
 * configured. It ignores an output schema (a run's JSON-schema rule): the
 * answer stays `Echo: <message>`, not JSON (docs/decisions.md, "Runs obey
 * their rulesets"), and tools: it never calls one.
 */
export const echoModelId = "loom:echo";

export function createEchoModel(tokenIntervalMs = 0): Model {
  const nextToken = echoPace(tokenIntervalMs);
  return {
    id: echoModelId,
    async generate({ messages, signal, onChunk }: GenerateRequest): Promise<GenerateResult> {
      signal.throwIfAborted();
      const text = echoAnswer(messages);
      const tokens = tokenize(text);
      if (onChunk) {
        for (const token of tokens) {
          // Yield between chunks, as a real stream would, so a cancel can land mid-answer.
          await nextToken();
          signal.throwIfAborted();
          await onChunk(token);
        }
      }
      return {
        text,
        inputTokens: messages.reduce((sum, turn) => sum + tokenize(turnText(turn)).length, 0),
        outputTokens: tokens.length,
      };
    },
  };
}

const turnText = (turn: ModelTurn) =>
  turn.role === "tool" ? turn.results.map((r) => r.text).join("\n") : turn.content;

function echoAnswer(messages: ModelTurn[]): string {
  const lastUser = messages.findLast((turn): turn is ChatTurn => turn.role === "user");
  return `Echo: ${lastUser?.content ?? ""}`.trimEnd();
}

/**
 * The wait before each streamed token: `intervalMs` (ECHO_TOKEN_INTERVAL_MS),
 * or with 0 one turn of the event loop.
 */
export const echoPace = (intervalMs: number) => (intervalMs > 0 ? () => sleep(intervalMs) : () => nextTurn());

/**
 * Word-like pieces with their leading whitespace (" hello", ":"), roughly as an
 * LLM tokenizer cuts text: they concatenate back to the input exactly, and
 * their number is the token count.
 */
export function tokenize(text: string): string[] {
  return text.match(/\s*[\p{L}\p{N}_]+|\s*[^\s\p{L}\p{N}_]+|\s+/gu) ?? [];
}
