import { maxMessagesPerBody } from "@loom/contracts/thread-messages";
import type { Thread } from "@loom/proto/runs/v1/runs_pb";
import { z } from "zod";
import { bodyLimits } from "../body.ts";
import type { ServiceClients } from "../clients.ts";
import { withExtraKeysAsMetadata } from "../extra-keys-metadata.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { threadListSchema, threadSchema } from "../schemas.ts";
import { boundedName, jsonObject, pageQuery, uuid } from "../validation.ts";
import { newMessage } from "./messages.ts";

const threadName = boundedName(200).meta({ description: "The thread's name" });
const alias = z.string().optional().meta({ description: "Another name to find it by (`?alias=` of ListThreads)" });
const messages = z
  .array(newMessage)
  .max(maxMessagesPerBody, `must have at most ${maxMessagesPerBody} items`)
  .optional()
  .meta({ description: "Its messages, oldest first" });

const createBody = z.object({
  name: threadName,
  alias,
  metadata: jsonObject.optional().meta({ description: "Any JSON object to keep with the thread" }),
  messages,
});

const updateBody = withExtraKeysAsMetadata(
  { name: threadName.optional(), alias, messages },
  "Changes the fields sent. `messages` replaces all the thread's messages, in order; `metadata` replaces the thread's metadata; any other key is stored in `metadata` too (griptape's conversation-memory driver sends its memory's meta so)",
);

export function threadJson(t: Thread | undefined) {
  if (!t) throw new Error("the runs service answered without a thread");
  return {
    thread_id: t.threadId,
    organization_id: t.organizationId,
    name: t.name,
    alias: t.alias ?? null,
    metadata: t.metadata ?? {},
    message_count: Number(t.messageCount),
    messages_length: Number(t.messagesLength),
    created_at: isoTime(t.createdAt),
    created_by: t.createdBy,
    updated_at: isoTime(t.updatedAt),
  };
}

/**
 * Threads (docs/behaviour.md §5): conversations. The griptape assistant
 * driver creates one before every run; the conversation-memory driver keeps
 * its whole window in one, replacing the messages on every store.
 */
export function threadOperations({ runs }: ServiceClients) {
  const threadPath = z.object({ thread_id: uuid });
  return [
    defineOperation({
      id: "CreateThread",
      method: "POST",
      path: "/threads",
      summary: "Creates a conversation thread, with its first messages in order",
      body: { schema: createBody, required: true, limit: bodyLimits.threads },
      response: { status: 201, description: "The new thread", schema: threadSchema },
      handle: async ({ body, call }) =>
        threadJson(
          (
            await runs.createThread(
              { name: body.name, alias: body.alias, metadata: body.metadata, messages: body.messages },
              call,
            )
          ).thread,
        ),
    }),
    defineOperation({
      id: "ListThreads",
      method: "GET",
      path: "/threads",
      summary: "The organization's threads, newest first, optionally by alias, name prefix or creator",
      query: pageQuery.extend({
        alias: z.string().optional().meta({ description: "Only the threads of this alias" }),
        starts_with: z.string().optional().meta({ description: "Only threads whose name starts with this" }),
        created_by: uuid.optional().meta({ description: "Only threads created by this user" }),
      }),
      response: { status: 200, description: "A page of threads", schema: threadListSchema },
      async handle({ query, call }) {
        const res = await runs.listThreads(
          {
            page: { page: query.page, pageSize: query.page_size },
            alias: query.alias,
            startsWith: query.starts_with,
            createdBy: query.created_by,
          },
          call,
        );
        return { threads: res.threads.map(threadJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "GetThread",
      method: "GET",
      path: "/threads/{thread_id}",
      summary: "One thread",
      params: threadPath,
      response: { status: 200, description: "The thread", schema: threadSchema },
      handle: async ({ params, call }) =>
        threadJson((await runs.getThread({ threadId: params.thread_id }, call)).thread),
    }),
    defineOperation({
      id: "UpdateThread",
      method: "PATCH",
      path: "/threads/{thread_id}",
      summary: "Changes the given fields of a thread; `messages` replaces its messages",
      params: threadPath,
      body: { schema: updateBody, required: false, limit: bodyLimits.threads },
      response: { status: 200, description: "The thread as it is now", schema: threadSchema },
      handle: async ({ params, body, call }) =>
        threadJson(
          (
            await runs.updateThread(
              {
                threadId: params.thread_id,
                name: body?.name,
                alias: body?.alias,
                metadata: body?.metadata,
                messages: body?.messages === undefined ? undefined : { values: body.messages },
              },
              call,
            )
          ).thread,
        ),
    }),
    defineOperation({
      id: "DeleteThread",
      method: "DELETE",
      path: "/threads/{thread_id}",
      summary: "Deletes a thread and its messages; its runs stay readable",
      params: threadPath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) => void (await runs.deleteThread({ threadId: params.thread_id }, call)),
    }),
  ];
}
