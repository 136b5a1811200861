/**
 * What the run worker needs from a model: one call that answers a
 * conversation, optionally streaming, and can be aborted; given tools, the
 * answer may instead be calls of them (the run's agent loop executes them and
 * calls again: agent-loop.ts). Providers live behind it (echo.ts, ai-sdk.ts);
 * resolve.ts picks one from configuration.
 */

import type { JsonObject } from "@bufbuild/protobuf";

export interface ChatTurn {
  role: "system" | "user" | "assistant";
  content: string;
}

/** A tool the model may call: one activity of one of the run's tools (docs/behaviour.md §5, "Runs with tools"). */
export interface ModelTool {
  /** `^[a-zA-Z0-9_-]{1,64}$`, unique among the run's tools. */
  name: string;
  description: string;
  /** The JSON Schema of its input object. */
  inputSchema: JsonObject;
}

/** One call of a tool the model asked for; `id` is the provider's (griptape's action `tag`). */
export interface ToolCall {
  id: string;
  name: string;
  input: JsonObject;
  /** Set when the model's input could not be read (not JSON): the call is not made, the model is told why. */
  inputError?: string;
}

/** An earlier answer of the model that called tools (with what it said beside them). */
export interface ToolCallsTurn {
  role: "assistant";
  content: string;
  toolCalls: ToolCall[];
}

/** The results of the previous turn's calls, as given back to the model. */
export interface ToolResultsTurn {
  role: "tool";
  results: Array<{ callId: string; name: string; text: string; isError: boolean }>;
}

export type ModelTurn = ChatTurn | ToolCallsTurn | ToolResultsTurn;

/** A streamed piece of a tool call: the first names it (`name`), the next carry fragments of its JSON input. */
export interface ToolCallDelta {
  id: string;
  /** Where the call sits among the answer's contents (the text, if any, first): griptape's chunk `index`. */
  index: number;
  name?: string;
  partialInput?: string;
}

export interface GenerateRequest {
  messages: ModelTurn[];
  /** Aborting it aborts the in-flight provider request; generate then rejects with `signal.reason`. */
  signal: AbortSignal;
  /** When given, the answer is streamed: called once per text delta, in order, awaited before the next. */
  onChunk?: (token: string) => void | Promise<void>;
  /**
   * When given, the answer must be JSON following this schema (a run's
   * JSON-schema rule): the provider's structured output, and the text is that JSON.
   */
  outputSchema?: JsonObject;
  /** Tools the model may call instead of answering; a model without tool support ignores them (echo). */
  tools?: ModelTool[];
  /** When given with `onChunk`, called for each streamed piece of a tool call, in order. */
  onToolCallDelta?: (delta: ToolCallDelta) => void | Promise<void>;
}

export interface GenerateResult {
  text: string;
  /** The tools the model called, in its order; absent or empty when it answered. */
  toolCalls?: ToolCall[];
  inputTokens: number;
  outputTokens: number;
}

export interface Model {
  /** `provider:model`, e.g. "loom:echo", "openai:gpt-4.1-mini"; runs report it in their events. */
  id: string;
  generate(req: GenerateRequest): Promise<GenerateResult>;
}

/**
 * `failed`: the provider refused the request (bad request, refusal) → the run
 * is FAILED. `error`: the platform could not get an answer (unreachable, 5xx,
 * rate limit or timeout after retries) → the run is ERROR (docs/behaviour.md §5).
 */
export type ModelFailureKind = "failed" | "error";

/** A model call that ended without an answer, classified for the run's status and `status_detail`. */
export class ModelFailure extends Error {
  override name = "ModelFailure";
  readonly kind: ModelFailureKind;
  /** `status_detail.reason`, e.g. "ProviderRejected", "ProviderUnavailable". */
  readonly reason: string;

  constructor(kind: ModelFailureKind, reason: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
    this.reason = reason;
  }
}
