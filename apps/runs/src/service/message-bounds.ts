import type { JsonObject } from "@bufbuild/protobuf";
import { invalidArgument, type Violation } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { charLength } from "@loom/contracts/text";
import { maxMessagesPerBody, maxMessageTextLength } from "@loom/contracts/thread-messages";
import type { Principal } from "@loom/server/principal";
import type { MessageContent, NewMessage } from "../store/messages.ts";

// The bounds of thread messages (@loom/contracts/thread-messages) checked as the
// API takes them: a bad body is refused whole, nothing stored.

/** Problems of one message's texts, with their public paths under `at` (`body`, `body.messages[2]`). */
export function textViolations(message: { input?: string; output?: string }, at: string): Violation[] {
  return (["input", "output"] as const).flatMap((field) => {
    const text = message[field];
    return text !== undefined && charLength(text) > maxMessageTextLength
      ? [{ path: `${at}.${field}`, message: `must be at most ${maxMessageTextLength} characters long` }]
      : [];
  });
}

/** A body's `messages`, checked (INVALID_ARGUMENT naming every problem), as messages of the thread to store. */
export function newMessages(
  given: Array<{ input: string; output: string; metadata?: JsonObject }>,
  threadId: string,
  principal: Principal,
  at: Date,
): NewMessage[] {
  const violations: Violation[] =
    given.length > maxMessagesPerBody
      ? [{ path: "body.messages", message: `must have at most ${maxMessagesPerBody} items` }]
      : given.flatMap((message, i) => textViolations(message, `body.messages[${i}]`));
  if (violations.length) throw invalidArgument(violations);
  return given.map((message) => newMessage(message, threadId, principal, at));
}

/** One message of the thread to store; `metadata` absent is `{}`. */
export function newMessage(
  content: { input: string; output: string; metadata?: JsonObject },
  threadId: string,
  principal: Principal,
  at: Date,
): NewMessage {
  const stored: MessageContent = { input: content.input, output: content.output, metadata: content.metadata ?? {} };
  return {
    id: newId(),
    organizationId: principal.organizationId,
    threadId,
    ...stored,
    createdBy: principal.userId,
    createdAt: at,
    updatedAt: at,
  };
}
