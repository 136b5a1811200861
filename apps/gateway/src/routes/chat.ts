import { Readable } from "node:stream";
import type { StreamChatMessageResponse } from "@loom/proto/runs/v1/chat_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { publicMessage } from "../errors.ts";
import {
  chatMessageResponseSchema,
  chatRequest,
  chatRequestSchema,
  deltaMessageJson,
  deltaMessageSchema,
  messageJson,
} from "../griptape-chat.ts";
import { defineOperation } from "../operation.ts";

/**
 * Chat messages (docs/behaviour.md §8), in griptape's serialization: what
 * griptape's GriptapeCloudPromptDriver posts and rebuilds.
 */
/** A frame of the chat stream: a DeltaMessage, or the error that ended it. */
const chatFrameSchema = z.union([
  deltaMessageSchema,
  z.object({ error: z.string().meta({ description: "Why the stream ended early" }) }),
]);

export function chatOperations({ chat }: ServiceClients) {
  return [
    defineOperation({
      id: "CreateChatMessage",
      method: "POST",
      path: "/chat/messages",
      summary: "Sends a conversation, tools and an output schema to the model; answers its one reply",
      body: { schema: chatRequestSchema, required: true },
      paid: true,
      response: {
        status: 201,
        description: "The model's reply, a griptape Message",
        schema: chatMessageResponseSchema,
      },
      async handle({ body, call }) {
        return messageJson((await chat.createChatMessage(chatRequest(body), call)).message);
      },
    }),
    defineOperation({
      id: "CreateChatMessageStream",
      method: "POST",
      path: "/chat/messages/stream",
      summary: "The same, streamed: `data: <DeltaMessage>` frames, then one with the usage, then the stream closes",
      body: { schema: chatRequestSchema, required: true },
      paid: true,
      response: {
        status: 200,
        description: 'Server-sent griptape DeltaMessages; an error mid-stream is `data: {"error": "..."}`',
        schema: chatFrameSchema,
        stream: true,
      },
      async handle({ body, call }) {
        // The call's signal aborts when the client goes away, which cancels the
        // RPC and, in the runs service, the provider request.
        const responses = chat.streamChatMessage(chatRequest(body), call)[Symbol.asyncIterator]();
        // Waiting for the first message lets an error before it be an ordinary JSON error.
        const first = await responses.next();
        return Readable.from(frames(first, responses), { objectMode: false });
      },
    }),
  ];
}

async function* frames(
  first: IteratorResult<StreamChatMessageResponse>,
  rest: AsyncIterator<StreamChatMessageResponse>,
): AsyncGenerator<string> {
  try {
    for (let next = first; !next.done; next = await rest.next())
      yield `data: ${JSON.stringify(deltaMessageJson(next.value))}\n\n`;
  } catch (error) {
    yield `data: ${JSON.stringify({ error: publicMessage(error) })}\n\n`;
  }
}
