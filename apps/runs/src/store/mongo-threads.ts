import { newId } from "@loom/contracts/ids";
import { type Doc, fromDoc, isDuplicateKey, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db, Filter } from "mongodb";
import { lengthOf, type MessageRecord, type MessageStore, type NewMessage, runTurn } from "./messages.ts";
import type { RunRecord, RunRecordStore } from "./run-records.ts";
import type { ThreadRecord, ThreadStore } from "./threads.ts";

/**
 * A thread document: the record but its counts (counted from its messages
 * when read), and the generation its messages are read from. Threads stored
 * before messages existed have neither metadata nor generation (`{}`, "").
 * `metadata` is kept as JSON text, as event payloads are: it is never
 * queried, and a JSON object's keys may be anything ("$set", "a.b", "")
 * while document field names may not.
 */
type ThreadDoc = Omit<Doc<ThreadRecord>, "messageCount" | "messagesLength" | "metadata"> & {
  metadata?: string;
  generation?: string;
};
/** A message document: the record (`metadata` as JSON text), its generation and its length (summed into `messagesLength`). */
type MessageDoc = Omit<Doc<MessageRecord>, "metadata"> & { metadata: string; generation: string; length: number };
/** An index taken in a generation of a thread (`threadId:generation:index`): kept after its message is deleted, so never given twice. */
type SlotDoc = { _id: string; threadId: string; generation: string; index: number };

const generationOf = (thread: Pick<ThreadDoc, "generation">) => thread.generation ?? "";
const slotId = (threadId: string, generation: string, index: number) => `${threadId}:${generation}:${index}`;
/** Tries to take an index this many times past the highest taken before giving up (as many appends at once). */
const maxIndexTries = 1000;

function messageOf(doc: MessageDoc | null): MessageRecord | undefined {
  if (!doc) return undefined;
  const { generation, length, metadata, ...record } = doc;
  return { ...fromDoc<Omit<MessageRecord, "metadata">>(record)!, metadata: JSON.parse(metadata) };
}

const messageDoc = (message: MessageRecord, generation: string): MessageDoc => ({
  ...toDoc(message),
  metadata: JSON.stringify(message.metadata),
  generation,
  length: lengthOf(message),
});

/**
 * The MongoDB runs store's threads and their messages, without transactions
 * and without counters (FerretDB has no multi-document transactions and does
 * not isolate concurrent updates of one document, so neither `$inc` nor a
 * guarded update counts reliably; docs/decisions.md, "Threads and their
 * messages"):
 *
 * - A thread's messages are those of its current `generation`. UpdateThread's
 *   `messages` are written under a new generation, then the thread switches to
 *   it (one update), then the old generation is deleted: a reader sees the old
 *   messages or the new ones, never a mix; a crash leaves only unreachable
 *   messages, deleted with the thread.
 * - An append takes its index with a unique insert of a slot (the highest
 *   taken, plus one; the next on a collision), then inserts the message; a
 *   crash between leaves an index gap, nothing else.
 * - `messageCount` and `messagesLength` are counted from the current
 *   generation's messages when a thread is read: always right, at one more
 *   read.
 */
export function createMongoThreads(
  db: Db,
  runs: Collection<Doc<RunRecord>>,
): ThreadStore & MessageStore & Pick<RunRecordStore, "appendRunMessage"> {
  const threads: Collection<ThreadDoc> = db.collection("threads");
  const messages: Collection<MessageDoc> = db.collection("thread_messages");
  const slots: Collection<SlotDoc> = db.collection("thread_message_slots");

  /** The records of thread documents, counted from their current generations' messages (one read for all). */
  async function withCounts(docs: ThreadDoc[]): Promise<ThreadRecord[]> {
    const lengths = docs.length
      ? await messages
          .find(
            { threadId: { $in: docs.map((d) => d._id) } },
            { projection: { threadId: 1, generation: 1, length: 1 } },
          )
          .toArray()
      : [];
    return docs.map(({ generation, metadata, ...doc }) => {
      const current = lengths.filter((m) => m.threadId === doc._id && m.generation === (generation ?? ""));
      return {
        ...fromDoc<Omit<ThreadRecord, "messageCount" | "messagesLength" | "metadata">>(doc)!,
        metadata: metadata === undefined ? {} : JSON.parse(metadata),
        messageCount: current.length,
        messagesLength: current.reduce((sum, m) => sum + m.length, 0),
      };
    });
  }
  const oneWithCounts = async (doc: ThreadDoc | null) => (doc ? (await withCounts([doc]))[0] : undefined);

  /** Writes messages as a generation's, indexes 0..n-1, their slots taken first. */
  async function writeGeneration(threadId: string, generation: string, list: NewMessage[]): Promise<void> {
    if (list.length === 0) return;
    await slots.insertMany(
      list.map((_, index) => ({ _id: slotId(threadId, generation, index), threadId, generation, index })),
    );
    await messages.insertMany(list.map((message, index) => messageDoc({ ...message, index }, generation)));
  }

  /** Takes the thread generation's next index: above every index taken, each given once however many ask at once. */
  async function takeIndex(threadId: string, generation: string): Promise<number> {
    const highest = await slots.find({ threadId, generation }).sort({ index: -1 }).limit(1).toArray();
    let index = (highest[0]?.index ?? -1) + 1;
    for (let tries = 0; tries < maxIndexTries; tries++, index++) {
      try {
        await slots.insertOne({ _id: slotId(threadId, generation, index), threadId, generation, index });
        return index;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
    }
    throw new Error(`no free message index in thread ${threadId} after ${maxIndexTries} tries`);
  }

  async function append(message: NewMessage): Promise<MessageRecord | undefined> {
    const thread = await threads.findOne(
      { _id: message.threadId, organizationId: message.organizationId },
      { projection: { generation: 1 } },
    );
    if (!thread) return undefined;
    const generation = generationOf(thread);
    const stored = { ...message, index: await takeIndex(message.threadId, generation) };
    await messages.insertOne(messageDoc(stored, generation));
    return stored;
  }

  /** A message of the organization in its thread's current generation (others are being replaced or deleted). */
  async function visible(organizationId: string, id: string): Promise<MessageDoc | undefined> {
    const doc = await messages.findOne({ _id: id });
    if (!doc || doc.organizationId !== organizationId) return undefined;
    const thread = await threads.findOne({ _id: doc.threadId }, { projection: { generation: 1 } });
    return thread && generationOf(thread) === doc.generation ? doc : undefined;
  }

  return {
    async appendRunMessage(run) {
      // Stored once: the message's id is the run's, so a retry finds it (or collides with it).
      if (run.threadId && run.threadMessage && !(await messages.findOne({ _id: run.id }, { projection: { _id: 1 } }))) {
        try {
          await append(
            runTurn({ ...run, threadId: run.threadId }, run.threadMessage, run.completedAt ?? run.updatedAt),
          );
        } catch (error) {
          if (!isDuplicateKey(error)) throw error;
        }
      }
      await runs.updateOne({ _id: run.id }, { $unset: { threadMessage: "" } });
    },

    async insertThread(thread, list) {
      const generation = newId();
      // The messages first: a crash leaves messages of no thread, never a thread missing some.
      await writeGeneration(thread.id, generation, list);
      const doc: ThreadDoc = { ...toDoc(thread), metadata: JSON.stringify(thread.metadata), generation };
      await threads.insertOne(doc);
      return {
        ...thread,
        messageCount: list.length,
        messagesLength: list.reduce((sum, message) => sum + lengthOf(message), 0),
      };
    },
    getThread: async (organizationId, id) => oneWithCounts(await threads.findOne({ _id: id, organizationId })),
    hasThread: async (organizationId, id) =>
      (await threads.findOne({ _id: id, organizationId }, { projection: { _id: 1 } })) !== null,
    async updateThread(organizationId, id, changes, list) {
      const { metadata, ...fields } = changes;
      // Absent fields stay (an `undefined` would unset them).
      const $set: Partial<ThreadDoc> = {
        ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)),
        ...(metadata === undefined ? {} : { metadata: JSON.stringify(metadata) }),
      };
      if (!list)
        return oneWithCounts(
          await threads.findOneAndUpdate({ _id: id, organizationId }, { $set }, { returnDocument: "after" }),
        );
      const standing = await threads.findOne({ _id: id, organizationId }, { projection: { generation: 1 } });
      if (!standing) return undefined;
      const generation = newId();
      await writeGeneration(id, generation, list);
      const switched = await threads.findOneAndUpdate(
        { _id: id, organizationId },
        { $set: { ...$set, generation } },
        { returnDocument: "after" },
      );
      // The replaced generation goes (only it: a concurrent replace may be writing its own); deleted
      // meanwhile, the new one goes too.
      const gone = switched ? generationOf(standing) : generation;
      await Promise.all([
        messages.deleteMany({ threadId: id, generation: gone }),
        slots.deleteMany({ threadId: id, generation: gone }),
      ]);
      return oneWithCounts(switched);
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
      return { items: await withCounts(docs), totalCount };
    },
    async deleteThread(organizationId, id) {
      if ((await threads.deleteOne({ _id: id, organizationId })).deletedCount !== 1) return false;
      await Promise.all([messages.deleteMany({ threadId: id }), slots.deleteMany({ threadId: id })]);
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
      // Absent fields stay (an `undefined` would blank them, and has no length).
      const { metadata, ...texts } = changes;
      const given = Object.fromEntries(Object.entries(texts).filter(([, v]) => v !== undefined));
      const changed = await messages.findOneAndUpdate(
        { _id: id },
        {
          $set: {
            ...given,
            ...(metadata === undefined ? {} : { metadata: JSON.stringify(metadata) }),
            length: lengthOf({ ...standing, ...given }),
          },
        },
        { returnDocument: "after" },
      );
      return messageOf(changed);
    },
    async deleteMessage(organizationId, id) {
      // Its slot stays: the index is not given again.
      const standing = await visible(organizationId, id);
      return !!standing && (await messages.deleteOne({ _id: id })).deletedCount === 1;
    },
    async latestMessages(threadId, limit) {
      const thread = await threads.findOne({ _id: threadId }, { projection: { generation: 1 } });
      if (!thread) return [];
      const docs = await messages
        .find({ threadId, generation: generationOf(thread) }, { projection: { input: 1, output: 1 } })
        .sort({ index: -1, _id: -1 })
        .limit(limit)
        .toArray();
      return docs.map((d) => ({ input: d.input, output: d.output })).reverse();
    },
  };
}
