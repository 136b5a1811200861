import type { Thread } from "@loom/proto/runs/v1/runs_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { threadListSchema, threadSchema } from "../schemas.ts";
import { boundedName, pageQuery, uuid } from "../validation.ts";

export function threadJson(t: Thread | undefined) {
  if (!t) throw new Error("the runs service answered without a thread");
  return {
    thread_id: t.threadId,
    organization_id: t.organizationId,
    name: t.name,
    alias: t.alias ?? null,
    created_at: isoTime(t.createdAt),
    created_by: t.createdBy,
    updated_at: isoTime(t.updatedAt),
  };
}

/** Threads (docs/behaviour.md §5): the griptape assistant driver creates one before every run. */
export function threadOperations({ runs }: ServiceClients) {
  const threadPath = z.object({ thread_id: uuid });
  return [
    defineOperation({
      id: "CreateThread",
      method: "POST",
      path: "/threads",
      summary: "Creates a conversation thread",
      body: { schema: z.object({ name: boundedName(256), alias: z.string().optional() }), required: true },
      response: { status: 201, description: "The new thread", schema: threadSchema },
      handle: async ({ body, call }) =>
        threadJson((await runs.createThread({ name: body.name, alias: body.alias }, call)).thread),
    }),
    defineOperation({
      id: "ListThreads",
      method: "GET",
      path: "/threads",
      summary: "The organization's threads, newest first, optionally by alias",
      query: pageQuery.extend({ alias: z.string().optional() }),
      response: { status: 200, description: "A page of threads", schema: threadListSchema },
      async handle({ query, call }) {
        const res = await runs.listThreads(
          { page: { page: query.page, pageSize: query.page_size }, alias: query.alias },
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
      id: "DeleteThread",
      method: "DELETE",
      path: "/threads/{thread_id}",
      summary: "Deletes a thread; its runs stay readable",
      params: threadPath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) => void (await runs.deleteThread({ threadId: params.thread_id }, call)),
    }),
  ];
}
