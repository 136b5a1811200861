import type { ServiceImpl } from "@connectrpc/connect";
import { invalidArgument, notFound } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { nameProblem } from "@loom/contracts/text";
import type { RunsService } from "@loom/proto/runs/v1/runs_pb";
import { requirePrincipal } from "@loom/server/principal";
import type { ThreadStore } from "../store/threads.ts";
import { newMessages } from "./message-bounds.ts";
import { threadMessage } from "./run-messages.ts";

type ThreadHandlers = Pick<
  ServiceImpl<typeof RunsService>,
  "createThread" | "getThread" | "updateThread" | "listThreads" | "deleteThread"
>;

/** Thread names: 1..200 characters, as every name (docs/behaviour.md §5). */
const checkName = (name: string) => {
  const problem = nameProblem(name, 1, 200);
  if (problem) throw invalidArgument([{ path: "body.name", message: problem }]);
};

/** The RunsService's thread RPCs: records of the organization, with their messages. */
export function threadHandlers(threads: ThreadStore, now: () => Date): ThreadHandlers {
  return {
    async createThread(req, ctx) {
      const principal = requirePrincipal(ctx);
      checkName(req.name);
      const at = now();
      const id = newId();
      const messages = newMessages(req.messages, id, principal, at);
      const thread = await threads.insertThread(
        {
          id,
          organizationId: principal.organizationId,
          name: req.name,
          alias: req.alias,
          metadata: req.metadata ?? {},
          createdBy: principal.userId,
          createdAt: at,
          updatedAt: at,
        },
        messages,
      );
      return { thread: threadMessage(thread) };
    },

    async getThread(req, ctx) {
      const thread = await threads.getThread(requirePrincipal(ctx).organizationId, req.threadId);
      if (!thread) throw notFound("thread");
      return { thread: threadMessage(thread) };
    },

    async updateThread(req, ctx) {
      const principal = requirePrincipal(ctx);
      if (req.name !== undefined) checkName(req.name);
      const at = now();
      const messages = req.messages && newMessages(req.messages.values, req.threadId, principal, at);
      const thread = await threads.updateThread(
        principal.organizationId,
        req.threadId,
        { name: req.name, alias: req.alias, metadata: req.metadata, updatedAt: at },
        messages,
      );
      if (!thread) throw notFound("thread");
      return { thread: threadMessage(thread) };
    },

    async listThreads(req, ctx) {
      const window = pageWindow(req.page);
      const page = await threads.listThreads(
        requirePrincipal(ctx).organizationId,
        { alias: req.alias, startsWith: req.startsWith, createdBy: req.createdBy },
        window.skip,
        window.pageSize,
      );
      return { threads: page.items.map(threadMessage), page: pageInfo(window, page.totalCount) };
    },

    async deleteThread(req, ctx) {
      if (!(await threads.deleteThread(requirePrincipal(ctx).organizationId, req.threadId))) throw notFound("thread");
      return {};
    },
  };
}
