import type { JsonObject } from "@bufbuild/protobuf";
import type { Page } from "@loom/contracts/paging";
import { charLength } from "@loom/contracts/text";

/** What one turn of a thread says: opaque strings (griptape stores artifact JSON in them) and an object. */
export interface MessageContent {
  input: string;
  output: string;
  metadata: JsonObject;
}

/** A message of a thread (docs/behaviour.md §5). */
export interface MessageRecord extends MessageContent {
  id: string;
  organizationId: string;
  threadId: string;
  /** Its 0-based position in the thread when it was created (or when UpdateThread replaced the messages); stable. */
  index: number;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** A message to store: the store gives it the thread's next index. */
export type NewMessage = Omit<MessageRecord, "index">;

/** What UpdateMessage may change; absent fields stay. */
export type MessageChanges = Partial<MessageContent> & { updatedAt: Date };

/** What a message adds to its thread's `messages_length`: the characters of its `input` and `output`. */
export const lengthOf = (message: Pick<MessageContent, "input" | "output">): number =>
  charLength(message.input) + charLength(message.output);

/**
 * The messages of threads. Every call by organization sees only that
 * organization's (undefined / false otherwise, as for an unknown id). After
 * each write the thread's `messageCount` and `messagesLength` count it.
 */
/** What a run's history reads of a message. */
export type MessageTexts = Pick<MessageRecord, "input" | "output">;

export interface MessageStore {
  /** Appends a message at the thread's next index; undefined when the thread is not the organization's. */
  appendMessage(message: NewMessage): Promise<MessageRecord | undefined>;
  /** A thread's messages by index ascending; undefined when the thread is not the organization's. */
  listMessages(
    organizationId: string,
    threadId: string,
    skip: number,
    limit: number,
  ): Promise<Page<MessageRecord> | undefined>;
  getMessage(organizationId: string, id: string): Promise<MessageRecord | undefined>;
  updateMessage(organizationId: string, id: string, changes: MessageChanges): Promise<MessageRecord | undefined>;
  deleteMessage(organizationId: string, id: string): Promise<boolean>;
  /**
   * The newest `limit` messages of a thread, oldest first, as much of them as
   * a run's history reads (its texts): the worker's read, any organization.
   */
  latestMessages(threadId: string, limit: number): Promise<MessageTexts[]>;
}

/** A SUCCEEDED run's turn as its thread's next message: the run's id (a retried append finds it), organization and creator. */
export const runTurn = (
  run: { id: string; organizationId: string; threadId: string; createdBy: string },
  content: MessageContent,
  at: Date,
): NewMessage => ({
  id: run.id,
  organizationId: run.organizationId,
  threadId: run.threadId,
  ...content,
  createdBy: run.createdBy,
  createdAt: at,
  updatedAt: at,
});
