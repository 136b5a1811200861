import { maxMessagesPerBody } from "@loom/contracts/thread-messages";
import type { ThreadMessage } from "@loom/proto/runs/v1/runs_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { withExtraKeysAsMetadata } from "../extra-keys-metadata.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { messageListSchema, messageSchema } from "../schemas.ts";
import { jsonObject, pageQuery, uuid } from "../validation.ts";

/**
 * A new message, as CreateMessage takes it and as the items of a thread's
 * `messages` (CreateThread, UpdateThread). `input` and `output` are opaque
 * strings (griptape stores artifact JSON in them).
 */
export const newMessage = withExtraKeysAsMetadata(
  {
    input: z.string().meta({ description: "What the user said (any string: griptape stores artifact JSON)" }),
    output: z.string().meta({ description: "What the assistant answered (any string)" }),
  },
  "`input` and `output` are any strings; `metadata` a JSON object; any other key is stored in `metadata` (griptape sends a run's meta so)",
);

const updateBody = z.object({
  input: z.string().optional().meta({ description: "What the user said; absent: unchanged" }),
  output: z.string().optional().meta({ description: "What the assistant answered; absent: unchanged" }),
  metadata: jsonObject.optional().meta({ description: "Any JSON object; replaces the stored one; absent: unchanged" }),
});

export function messageJson(m: ThreadMessage | undefined) {
  if (!m) throw new Error("the runs service answered without a message");
  return {
    message_id: m.messageId,
    thread_id: m.threadId,
    index: Number(m.index),
    input: m.input,
    output: m.output,
    metadata: m.metadata ?? {},
    created_at: isoTime(m.createdAt),
    created_by: m.createdBy,
    updated_at: isoTime(m.updatedAt),
  };
}

/** A thread's messages (docs/behaviour.md §5): its conversation, in order. */
export function messageOperations({ runs }: ServiceClients) {
  const messagePath = z.object({ message_id: uuid });
  const threadPath = z.object({ thread_id: uuid });
  return [
    defineOperation({
      id: "CreateMessage",
      method: "POST",
      path: "/threads/{thread_id}/messages",
      summary: "Appends a message to a thread; it takes the thread's next index",
      params: threadPath,
      body: { schema: newMessage, required: true },
      response: { status: 201, description: "The new message", schema: messageSchema },
      handle: async ({ params, body, call }) =>
        messageJson((await runs.createMessage({ threadId: params.thread_id, ...body }, call)).message),
    }),
    defineOperation({
      id: "ListMessages",
      method: "GET",
      path: "/threads/{thread_id}/messages",
      summary:
        "A thread's messages in conversation order (by index, oldest first); all of them (up to 1,000) when page_size is absent",
      params: threadPath,
      query: pageQuery,
      response: { status: 200, description: "A page of messages", schema: messageListSchema },
      async handle({ params, query, call, ctx }) {
        // griptape's conversation-memory driver loads one page and then replaces the thread with what it loaded:
        // without page_size, the whole thread (as many messages as an UpdateThread body may carry).
        const pageSize = ctx.query.page_size === undefined ? maxMessagesPerBody : query.page_size;
        const res = await runs.listMessages({ threadId: params.thread_id, page: { page: query.page, pageSize } }, call);
        return { messages: res.messages.map(messageJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "GetMessage",
      method: "GET",
      path: "/messages/{message_id}",
      summary: "One message",
      params: messagePath,
      response: { status: 200, description: "The message", schema: messageSchema },
      handle: async ({ params, call }) =>
        messageJson((await runs.getMessage({ messageId: params.message_id }, call)).message),
    }),
    defineOperation({
      id: "UpdateMessage",
      method: "PATCH",
      path: "/messages/{message_id}",
      summary: "Changes the given fields of a message (`metadata` sent replaces it); its index stays",
      params: messagePath,
      body: { schema: updateBody, required: false },
      response: { status: 200, description: "The message as it is now", schema: messageSchema },
      handle: async ({ params, body, call }) =>
        messageJson(
          (
            await runs.updateMessage(
              { messageId: params.message_id, input: body?.input, output: body?.output, metadata: body?.metadata },
              call,
            )
          ).message,
        ),
    }),
    defineOperation({
      id: "DeleteMessage",
      method: "DELETE",
      path: "/messages/{message_id}",
      summary: "Deletes a message; the others keep their indexes",
      params: messagePath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) => void (await runs.deleteMessage({ messageId: params.message_id }, call)),
    }),
  ];
}
