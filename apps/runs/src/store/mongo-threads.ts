import { newId } from "@loom/contracts/ids";
import { type Doc, fromDoc, isDuplicateKey, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db, Filter } from "mongodb";
import { lengthOf, type MessageRecord, type MessageStore, type NewMessage, runTurn } from "./messages.ts";
import type { RunRecord, RunRecordStore } from "./run-records.ts";
import type { ThreadRecord, ThreadStore } from "./threads.ts";

/**
 * A thread document: the record, its next message index, and the generation
 * its messages are read from. Threads stored before messages existed lack
 * all of these (read as `{}`, 0 and "").
 */
type ThreadDoc = Doc<ThreadRecord> & { nextIndex?: number; generation?: string };
/** A message document: the record, its generation and its length (summed by a recount). */
type MessageDoc = Doc<MessageRecord> & { generation: string; length: number };

const generationOf = (thread: Pick<ThreadDoc, "generation">) => thread.generation ?? "";
/** A thread whose current generation is `generation` ("" also matches a thread that never had one). */
const inGeneration = (generation: string): Filter<ThreadDoc> =>
  generation === "" ? { $or: [{ generation }, { generation: { $exists: false } }] } : { generation };

function threadOf(doc: ThreadDoc | null): ThreadRecord | undefined {
  if (!doc) return undefined;
  const { nextIndex, generation, ...record } = doc;
  const thread = fromDoc<ThreadRecord>(record)!;
  return {
    ...thread,
    metadata: thread.metadata ?? {},
    messageCount: thread.messageCount ?? 0,
    messagesLength: thread.messagesLength ?? 0,
  };
}

function messageOf(doc: MessageDoc | null): MessageRecord | undefined {
  if (!doc) return undefined;
  const { generation, length, ...record } = doc;
  return fromDoc<MessageRecord>(record);
}

/**
 * The MongoDB runs store's threads and their messages, without transactions
 * (FerretDB has none across documents; docs/decisions.md, "Thread messages"):
 *
 * - A thread's messages are those of its current `generation`. UpdateThread's
 *   `messages` are written under a new generation, then the thread switches to
 *   it (one update, with its counts), then the old generation is deleted: a
 *   reader sees the old messages or the new ones, never a mix; a crash leaves
 *   only unreachable messages, deleted with the thread.
 * - An append takes its index and bumps the counts with one `$inc` on the
 *   thread, which also names the generation to write to, then inserts the
 *   message. A crash between the two leaves the counts one message ahead (and
 *   an index gap); a run's turn is completed by the sweep, which recounts
 *   (only then: a recount races concurrent appends, the `$inc` does not).
 */
export function createMongoThreads(
  db: Db,
  runs: Collection<Doc<RunRecord>>,
): ThreadStore & MessageStore & Pick<RunRecordStore, "appendRunMessage"> {
  const threads: Collection<ThreadDoc> = db.collection("threads");
  const messages: Collection<MessageDoc> = db.collection("thread_messages");

  const messageDocs = (generation: string, list: NewMessage[]): MessageDoc[] =>
    list.map((message, index) => ({ ...toDoc({ ...message, index }), generation, length: lengthOf(message) }));
  const counts = (list: NewMessage[]) => ({
    nextIndex: list.length,
    messageCount: list.length,
    messagesLength: list.reduce((sum, message) => sum + lengthOf(message), 0),
  });

  async function append(message: NewMessage): Promise<MessageRecord | undefined> {
    const before = await threads.findOneAndUpdate(
      { _id: message.threadId, organizationId: message.organizationId },
      { $inc: { nextIndex: 1, messageCount: 1, messagesLength: lengthOf(message) } },
      { returnDocument: "before" },
    );
    if (!before) return undefined;
    const stored = { ...message, index: before.nextIndex ?? 0 };
    await messages.insertOne({ ...toDoc(stored), generation: generationOf(before), length: lengthOf(message) });
    return stored;
  }

  /** A message of the organization in its thread's current generation (others are being replaced or deleted). */
  async function visible(organizationId: string, id: string): Promise<MessageDoc | undefined> {
    const doc = await messages.findOne({ _id: id });
    if (!doc || doc.organizationId !== organizationId) return undefined;
    const thread = await threads.findOne({ _id: doc.threadId }, { projection: { generation: 1 } });
    return thread && generationOf(thread) === doc.generation ? doc : undefined;
  }

  /** The thread's counts from its messages: after a crash may have left them off. */
  async function recount(threadId: string): Promise<void> {
    const thread = await threads.findOne({ _id: threadId }, { projection: { generation: 1 } });
    if (!thread) return;
    const lengths = await messages
      .find({ threadId, generation: generationOf(thread) }, { projection: { length: 1 } })
      .toArray();
    await threads.updateOne(
      { _id: threadId, ...inGeneration(generationOf(thread)) },
      {
        $set: { messageCount: lengths.length, messagesLength: lengths.reduce((sum, m) => sum + m.length, 0) },
      },
    );
  }

  /** Stores the run's turn unless it is stored already; true when this call stored it. */
  async function storeTurn(run: RunRecord): Promise<boolean> {
    if (!run.threadId || !run.threadMessage) return false;
    if (await messages.findOne({ _id: run.id }, { projection: { _id: 1 } })) return false;
    const at = run.completedAt ?? run.updatedAt;
    try {
      await append(runTurn({ ...run, threadId: run.threadId }, run.threadMessage, at));
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false; // another append of it got there first
      throw error;
    }
  }

  const clearMark = async (runId: string) =>
    void (await runs.updateOne({ _id: runId }, { $unset: { threadMessage: "" } }));

  return {
    async appendRunMessage(run, afterFailure) {
      await storeTurn(run);
      if (afterFailure && run.threadId) await recount(run.threadId);
      await clearMark(run.id);
    },

    async insertThread(thread, list) {
      const generation = newId();
      // The messages first: a crash leaves messages of no thread, never a thread missing some.
      if (list.length) await messages.insertMany(messageDocs(generation, list));
      const doc: ThreadDoc = { ...toDoc({ ...thread, ...counts(list) }), generation, nextIndex: list.length };
      await threads.insertOne(doc);
      return threadOf(doc)!;
    },
    getThread: async (organizationId, id) => threadOf(await threads.findOne({ _id: id, organizationId })),
    async updateThread(organizationId, id, changes, list) {
      const $set: Partial<ThreadDoc> = { ...changes };
      if (!list)
        return threadOf(
          await threads.findOneAndUpdate({ _id: id, organizationId }, { $set }, { returnDocument: "after" }),
        );
      if (!(await threads.findOne({ _id: id, organizationId }, { projection: { _id: 1 } }))) return undefined;
      const generation = newId();
      if (list.length) await messages.insertMany(messageDocs(generation, list));
      const before = await threads.findOneAndUpdate(
        { _id: id, organizationId },
        { $set: { ...$set, ...counts(list), generation } },
        { returnDocument: "before" },
      );
      // Deleted meanwhile: the new messages go too. Else the replaced generation goes (only it: a concurrent
      // replace may be writing its own).
      await messages.deleteMany({ threadId: id, generation: before ? generationOf(before) : generation });
      return before ? threadOf(await threads.findOne({ _id: id, organizationId })) : undefined;
    },
    async listThreads(organizationId, filter, skip, limit) {
      const query: Filter<ThreadDoc> = { organizationId };
      if (filter.alias !== undefined) query.alias = filter.alias;
      if (filter.createdBy !== undefined) query.createdBy = filter.createdBy;
      // Every character taken literally.
      if (filter.startsWith) query.name = { $regex: `^${filter.startsWith.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}` };
      const [docs, totalCount] = await Promise.all([
        threads.find(query).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        threads.countDocuments(query),
      ]);
      return { items: docs.map((d) => threadOf(d)!), totalCount };
    },
    async deleteThread(organizationId, id) {
      if ((await threads.deleteOne({ _id: id, organizationId })).deletedCount !== 1) return false;
      await messages.deleteMany({ threadId: id });
      return true;
    },
    async lockThread(threadId, runId, staleHolders) {
      const taken = await threads.findOneAndUpdate(
        {
          _id: threadId,
          $or: [{ activeRunId: { $exists: false } }, { activeRunId: { $in: [runId, ...staleHolders] } }],
        },
        { $set: { activeRunId: runId } },
        { returnDocument: "after" },
      );
      if (taken) return { locked: true };
      const thread = await threads.findOne({ _id: threadId });
      return thread ? { locked: false, holder: thread.activeRunId } : { locked: true };
    },
    async unlockThread(threadId, runId) {
      // A run whose turn is not appended yet keeps the thread: the next run must see it (the sweep appends it, then lets go).
      const held = await runs.findOne({ _id: runId }, { projection: { threadMessage: 1 } }); // `_id` alone, as getRun
      if (held?.threadMessage) return;
      await threads.updateOne({ _id: threadId, activeRunId: runId }, { $unset: { activeRunId: "" } });
    },

    appendMessage: append,
    async listMessages(organizationId, threadId, skip, limit) {
      const thread = await threads.findOne({ _id: threadId, organizationId }, { projection: { generation: 1 } });
      if (!thread) return undefined;
      const query = { threadId, generation: generationOf(thread) };
      const [docs, totalCount] = await Promise.all([
        messages.find(query).sort({ index: 1, _id: 1 }).skip(skip).limit(limit).toArray(),
        messages.countDocuments(query),
      ]);
      return { items: docs.map((d) => messageOf(d)!), totalCount };
    },
    getMessage: async (organizationId, id) => messageOf((await visible(organizationId, id)) ?? null),
    async updateMessage(organizationId, id, changes) {
      const standing = await visible(organizationId, id);
      if (!standing) return undefined;
      const next = { ...standing, ...changes };
      const changed = await messages.findOneAndUpdate(
        { _id: id },
        { $set: { ...changes, length: lengthOf(next) } },
        { returnDocument: "after" },
      );
      if (!changed) return undefined;
      await threads.updateOne(
        { _id: standing.threadId, ...inGeneration(standing.generation) },
        { $inc: { messagesLength: lengthOf(next) - standing.length } },
      );
      return messageOf(changed);
    },
    async deleteMessage(organizationId, id) {
      const standing = await visible(organizationId, id);
      if (!standing || (await messages.deleteOne({ _id: id })).deletedCount !== 1) return false;
      await threads.updateOne(
        { _id: standing.threadId, ...inGeneration(standing.generation) },
        { $inc: { messageCount: -1, messagesLength: -standing.length } },
      );
      return true;
    },
    async latestMessages(threadId, limit) {
      const thread = await threads.findOne({ _id: threadId }, { projection: { generation: 1 } });
      if (!thread) return [];
      const docs = await messages
        .find({ threadId, generation: generationOf(thread) })
        .sort({ index: -1, _id: -1 })
        .limit(limit)
        .toArray();
      return docs.map((d) => messageOf(d)!).reverse();
    },
  };
}
