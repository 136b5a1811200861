import type { ServiceImpl } from "@connectrpc/connect";
import { invalidArgument, notFound } from "@loom/contracts/errors";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { maxMessagesPerBody } from "@loom/contracts/thread-messages";
import type { RunsService } from "@loom/proto/runs/v1/runs_pb";
import { requirePrincipal } from "@loom/server/principal";
import type { MessageStore } from "../store/messages.ts";
import { newMessage, textViolations } from "./message-bounds.ts";
import { messageMessage } from "./run-messages.ts";

type MessageHandlers = Pick<
  ServiceImpl<typeof RunsService>,
  "createMessage" | "listMessages" | "getMessage" | "updateMessage" | "deleteMessage"
>;

/** Refuses texts out of bounds (INVALID_ARGUMENT, `body.input` / `body.output`). */
function checkTexts(message: { input?: string; output?: string }): void {
  const violations = textViolations(message, "body");
  if (violations.length) throw invalidArgument(violations);
}

/** The RunsService's message RPCs: the messages of the organization's threads (docs/behaviour.md §5). */
export function messageHandlers(messages: MessageStore, now: () => Date): MessageHandlers {
  return {
    async createMessage(req, ctx) {
      const principal = requirePrincipal(ctx);
      checkTexts(req);
      const message = await messages.appendMessage(newMessage(req, req.threadId, principal, now()));
      if (!message) throw notFound("thread");
      return { message: messageMessage(message) };
    },

    async listMessages(req, ctx) {
      // The gateway asks for a whole thread (up to an UpdateThread body's messages) when no page_size is given.
      const window = pageWindow(req.page, maxMessagesPerBody);
      const page = await messages.listMessages(
        requirePrincipal(ctx).organizationId,
        req.threadId,
        window.skip,
        window.pageSize,
      );
      if (!page) throw notFound("thread");
      return { messages: page.items.map(messageMessage), page: pageInfo(window, page.totalCount) };
    },

    async getMessage(req, ctx) {
      const message = await messages.getMessage(requirePrincipal(ctx).organizationId, req.messageId);
      if (!message) throw notFound("message");
      return { message: messageMessage(message) };
    },

    async updateMessage(req, ctx) {
      checkTexts(req);
      const message = await messages.updateMessage(requirePrincipal(ctx).organizationId, req.messageId, {
        input: req.input,
        output: req.output,
        metadata: req.metadata,
        updatedAt: now(),
      });
      if (!message) throw notFound("message");
      return { message: messageMessage(message) };
    },

    async deleteMessage(req, ctx) {
      if (!(await messages.deleteMessage(requirePrincipal(ctx).organizationId, req.messageId)))
        throw notFound("message");
      return {};
    },
  };
}
