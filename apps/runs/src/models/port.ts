/**
 * What the run worker needs from a model: one call that answers a
 * conversation, optionally streaming, and can be aborted. Providers live
 * behind it (echo.ts, ai-sdk.ts); resolve.ts picks one from configuration.
 */

import type { JsonObject } from "@bufbuild/protobuf";

export interface ChatTurn {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface GenerateRequest {
  messages: ChatTurn[];
  /** Aborting it aborts the in-flight provider request; generate then rejects with `signal.reason`. */
  signal: AbortSignal;
  /** When given, the answer is streamed: called once per text delta, in order, awaited before the next. */
  onChunk?: (token: string) => void | Promise<void>;
  /**
   * When given, the answer must be JSON following this schema (a run's
   * JSON-schema rule): the provider's structured output, and the text is that JSON.
   */
  outputSchema?: JsonObject;
}

export interface GenerateResult {
  text: string;
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
