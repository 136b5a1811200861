import type { ServiceImpl } from "@connectrpc/connect";
import { invalidArgument, notFound } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { nameProblem } from "@loom/contracts/text";
import type { RunsService } from "@loom/proto/runs/v1/runs_pb";
import { requirePrincipal } from "@loom/server/principal";
import type { ThreadRecord, ThreadStore } from "../store/threads.ts";
import { threadMessage } from "./run-messages.ts";

type ThreadHandlers = Pick<
  ServiceImpl<typeof RunsService>,
  "createThread" | "getThread" | "listThreads" | "deleteThread"
>;

/** The RunsService's thread RPCs: plain records of the organization. */
export function threadHandlers(threads: ThreadStore, now: () => Date): ThreadHandlers {
  return {
    async createThread(req, ctx) {
      const principal = requirePrincipal(ctx);
      const problem = nameProblem(req.name, 1, 256);
      if (problem) throw invalidArgument([{ path: "body.name", message: problem }]);
      const at = now();
      const thread: ThreadRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        name: req.name,
        alias: req.alias,
        createdBy: principal.userId,
        createdAt: at,
        updatedAt: at,
      };
      await threads.insertThread(thread);
      return { thread: threadMessage(thread) };
    },

    async getThread(req, ctx) {
      const thread = await threads.getThread(requirePrincipal(ctx).organizationId, req.threadId);
      if (!thread) throw notFound("thread");
      return { thread: threadMessage(thread) };
    },

    async listThreads(req, ctx) {
      const window = pageWindow(req.page);
      const page = await threads.listThreads(
        requirePrincipal(ctx).organizationId,
        req.alias,
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
