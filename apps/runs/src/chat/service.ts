import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { invalidArgument } from "@loom/contracts/errors";
import {
  ArtifactSchema,
  ChatMessageSchema,
  ChatService,
  type CreateChatMessageRequest,
  MessageContentSchema,
  type StreamChatMessageResponse,
  StreamChatMessageResponseSchema,
  UsageSchema,
} from "@loom/proto/runs/v1/chat_pb";
import { requirePrincipal } from "@loom/server/principal";
import { griptapeId } from "../griptape.ts";
import { ModelFailure } from "../models/port.ts";
import { callSettings } from "./extra-params.ts";
import {
  type ChatBackend,
  type ChatCall,
  type ChatUsage,
  type ReplyDelta,
  type ReplyPart,
  type StructuredOutputStrategy,
  structuredOutputStrategies,
} from "./port.ts";

type ChatRequest = Omit<CreateChatMessageRequest, "$typeName">;

const roles = ["user", "assistant", "system"];

/**
 * CreateChatMessage and StreamChatMessage (docs/behaviour.md §8): a request picks
 * one of `backends` by `driver_configuration.model` (absent: the first, which
 * is DEFAULT_MODEL).
 */
export function createChatService({
  backends,
  timeoutMs,
}: {
  backends: Map<string, ChatBackend>;
  timeoutMs: number;
}): ServiceImpl<typeof ChatService> {
  const defaultBackend = [...backends.values()][0];
  if (!defaultBackend) throw new Error("chat needs at least one model");

  function prepare(req: ChatRequest, ctx: HandlerContext): { backend: ChatBackend; call: ChatCall } {
    requirePrincipal(ctx);
    const problems: Array<{ path: string; message: string }> = [];
    const config = req.driverConfiguration;
    // Empty is absent, as null is (no model is named ""): the API description allows any string.
    const modelName = config?.model || undefined;
    const backend = modelName === undefined ? defaultBackend : backends.get(modelName);
    if (!backend)
      problems.push({
        path: "body.driver_configuration.model",
        message: `unknown model "${modelName}"; allowed: ${[...backends.keys()].join(", ")}`,
      });
    if (req.messages.length === 0) problems.push({ path: "body.messages", message: "must hold at least one message" });
    req.messages.forEach((message, i) => {
      if (!roles.includes(message.role))
        problems.push({ path: `body.messages[${i}].role`, message: `must be one of ${roles.join(", ")}` });
    });
    const strategy = config?.structuredOutputStrategy ?? "native";
    if (!structuredOutputStrategies.some((known) => known === strategy)) {
      problems.push({
        path: "body.driver_configuration.structured_output_strategy",
        message: `must be one of ${structuredOutputStrategies.join(", ")}`,
      });
    }
    if (config?.maxTokens !== undefined && config.maxTokens < 1)
      problems.push({ path: "body.driver_configuration.max_tokens", message: "must be at least 1" });
    const extra = callSettings(config?.extraParams);
    if ("problems" in extra) problems.push(...extra.problems);
    if (problems.length > 0 || !backend || "problems" in extra) throw invalidArgument(problems);
    return {
      backend,
      call: {
        messages: req.messages,
        tools: req.tools,
        outputSchema: req.outputSchema,
        maxTokens: config?.maxTokens,
        temperature: config?.temperature,
        useNativeTools: config?.useNativeTools ?? true,
        structuredOutputStrategy: strategy as StructuredOutputStrategy,
        settings: extra.settings,
        // The client going away or the time running out aborts the provider request.
        signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]),
      },
    };
  }

  return {
    async createChatMessage(req, ctx) {
      const { backend, call } = prepare(req, ctx);
      const reply = await backend.reply(call).catch((error: unknown) => rethrow(error, call.signal, timeoutMs));
      return {
        message: create(ChatMessageSchema, {
          role: "assistant",
          content: reply.parts.map(contentOf),
          usage: usageOf(reply.usage),
        }),
      };
    },

    async *streamChatMessage(req, ctx) {
      const { backend, call } = prepare(req, ctx);
      // The backend pushes deltas through a callback; this hands them to the
      // generator one by one, each push waiting until its frame is taken, so
      // a slow client slows the reading of the provider's stream.
      type Item = { delta: ReplyDelta; taken: () => void } | { usage: ChatUsage } | { error: unknown };
      const queue: Item[] = [];
      let wake: (() => void) | undefined;
      const push = (item: Item) => {
        queue.push(item);
        wake?.();
      };
      // A cancel releases a push nobody will take, so the backend's call ends too.
      const handOver = (delta: ReplyDelta) =>
        new Promise<void>((resolve, reject) => {
          call.signal.throwIfAborted();
          const onAbort = () => reject(call.signal.reason);
          call.signal.addEventListener("abort", onAbort, { once: true });
          const taken = () => {
            call.signal.removeEventListener("abort", onAbort);
            resolve();
          };
          push({ delta, taken });
        });
      void backend.stream(call, handOver).then(
        (usage) => push({ usage }),
        (error: unknown) => push({ error }),
      );
      for (;;) {
        if (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        const item = queue.shift()!;
        if ("error" in item) rethrow(item.error, call.signal, timeoutMs);
        if ("usage" in item) {
          yield create(StreamChatMessageResponseSchema, { kind: { case: "usage", value: usageOf(item.usage) } });
          return;
        }
        item.taken();
        yield deltaOf(item.delta);
      }
    },
  };
}

function contentOf(part: ReplyPart) {
  const id = griptapeId();
  if (part.kind === "text") {
    return create(MessageContentSchema, {
      kind: {
        case: "text",
        value: create(ArtifactSchema, {
          type: "TextArtifact",
          id,
          name: id,
          meta: {},
          value: { case: "text", value: part.text },
        }),
      },
    });
  }
  const { tag, name, path, input } = part.call;
  const artifact = create(ArtifactSchema, {
    type: "ActionArtifact",
    id,
    name: id,
    meta: {},
    value: { case: "action", value: { tag, name, path, input } },
  });
  return create(MessageContentSchema, { kind: { case: "actionCall", value: artifact } });
}

function deltaOf(delta: ReplyDelta): StreamChatMessageResponse {
  if (delta.kind === "text")
    return create(StreamChatMessageResponseSchema, {
      kind: { case: "textDelta", value: { text: delta.text, index: delta.index } },
    });
  const { index, tag, name, path, partialInput } = delta;
  return create(StreamChatMessageResponseSchema, {
    kind: { case: "actionCallDelta", value: { index, tag, name, path, partialInput } },
  });
}

const usageOf = (usage: ChatUsage) =>
  create(UsageSchema, { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens });

/** A provider refusal is the request's fault (400), anything else the platform's (503); a cancel stays a cancel. */
function rethrow(error: unknown, signal: AbortSignal, timeoutMs: number): never {
  if (signal.aborted) {
    const timedOut = signal.reason instanceof DOMException && signal.reason.name === "TimeoutError";
    if (timedOut)
      throw new ConnectError(`the model did not answer within ${timeoutMs / 1000} s`, Code.DeadlineExceeded);
    throw new ConnectError("the chat call was cancelled", Code.Canceled);
  }
  if (error instanceof ModelFailure)
    throw new ConnectError(error.message, error.kind === "failed" ? Code.InvalidArgument : Code.Unavailable);
  throw error;
}
