import { charLength } from "@loom/contracts/text";
import { newestFirstOrder, optional, type SqliteHandle } from "@loom/store/sqlite";
import { lengthOf, type MessageRecord, type MessageStore, type MessageTexts, type NewMessage } from "./messages.ts";
import { messageOf, threadOf } from "./sqlite-rows.ts";
import type { ThreadStore } from "./threads.ts";

/**
 * The SQLite runs store's threads and their messages. Every message write
 * changes its thread's counts (and next index) in the same transaction, and
 * UpdateThread's `messages` replaces them in one: a reader never sees a mix.
 */
export function createSqliteThreads(handle: SqliteHandle): ThreadStore &
  MessageStore & {
    /** Appends a message inside the caller's transaction (a run's turn, with its move). */
    appendInTransaction(message: NewMessage): MessageRecord | undefined;
  } {
  const { prepare } = handle;

  function insertMessage(message: MessageRecord): void {
    prepare(
      `INSERT INTO runs_messages (id, organization_id, thread_id, idx, input, output, metadata, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      message.id,
      message.organizationId,
      message.threadId,
      message.index,
      message.input,
      message.output,
      JSON.stringify(message.metadata),
      message.createdBy,
      message.createdAt.getTime(),
      message.updatedAt.getTime(),
    );
  }

  /** The thread's messages become these, indexes 0..n-1, and its counts theirs. */
  function replaceMessages(threadId: string, messages: NewMessage[]): void {
    prepare("DELETE FROM runs_messages WHERE thread_id = ?").run(threadId);
    messages.forEach((message, index) => insertMessage({ ...message, index }));
    prepare("UPDATE runs_threads SET next_index = ?, message_count = ?, messages_length = ? WHERE id = ?").run(
      messages.length,
      messages.length,
      messages.reduce((sum, message) => sum + lengthOf(message), 0),
      threadId,
    );
  }

  function append(message: NewMessage): MessageRecord | undefined {
    const taken = prepare(
      `UPDATE runs_threads SET next_index = next_index + 1, message_count = message_count + 1, messages_length = messages_length + ?
       WHERE id = ? AND organization_id = ? RETURNING next_index - 1 AS idx`,
    ).get(lengthOf(message), message.threadId, message.organizationId);
    if (!taken) return undefined;
    const stored = { ...message, index: Number(taken.idx) };
    insertMessage(stored);
    return stored;
  }

  const messageById = (organizationId: string, id: string) =>
    messageOf(prepare("SELECT * FROM runs_messages WHERE id = ? AND organization_id = ?").get(id, organizationId));
  const threadById = (organizationId: string, id: string) =>
    threadOf(prepare("SELECT * FROM runs_threads WHERE id = ? AND organization_id = ?").get(id, organizationId));

  return {
    appendInTransaction: append,

    async insertThread(thread, messages) {
      return handle.transaction(() => {
        prepare(
          `INSERT INTO runs_threads (id, organization_id, name, alias, metadata, created_by, created_at, updated_at, active_run_id)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(
          thread.id,
          thread.organizationId,
          thread.name,
          thread.alias ?? null,
          JSON.stringify(thread.metadata),
          thread.createdBy,
          thread.createdAt.getTime(),
          thread.updatedAt.getTime(),
          thread.activeRunId ?? null,
        );
        replaceMessages(thread.id, messages);
        return threadById(thread.organizationId, thread.id)!;
      });
    },
    getThread: async (organizationId, id) => threadById(organizationId, id),
    hasThread: async (organizationId, id) =>
      prepare("SELECT 1 FROM runs_threads WHERE id = ? AND organization_id = ?").get(id, organizationId) !== undefined,
    async updateThread(organizationId, id, changes, messages) {
      const columns: [string, string | number][] = [["updated_at", changes.updatedAt.getTime()]];
      if (changes.name !== undefined) columns.push(["name", changes.name]);
      if (changes.alias !== undefined) columns.push(["alias", changes.alias]);
      if (changes.metadata !== undefined) columns.push(["metadata", JSON.stringify(changes.metadata)]);
      return handle.transaction(() => {
        const changed =
          prepare(
            `UPDATE runs_threads SET ${columns.map(([column]) => `${column} = ?`).join(", ")} WHERE id = ? AND organization_id = ?`,
          ).run(...columns.map(([, value]) => value), id, organizationId).changes === 1;
        if (!changed) return undefined;
        if (messages) replaceMessages(id, messages);
        return threadById(organizationId, id);
      });
    },
    async listThreads(organizationId, filter, skip, limit) {
      const conditions = ["organization_id = ?"];
      const params: (string | number)[] = [organizationId];
      if (filter.alias !== undefined) {
        conditions.push("alias = ?");
        params.push(filter.alias);
      }
      if (filter.createdBy !== undefined) {
        conditions.push("created_by = ?");
        params.push(filter.createdBy);
      }
      if (filter.startsWith) {
        // Every character taken literally (no LIKE: its wildcards and case folding); substr counts characters.
        conditions.push("substr(name, 1, ?) = ?");
        params.push(charLength(filter.startsWith), filter.startsWith);
      }
      const where = conditions.join(" AND ");
      const totalCount = Number(prepare(`SELECT count(*) AS n FROM runs_threads WHERE ${where}`).get(...params)!.n);
      const rows = prepare(
        `SELECT * FROM runs_threads WHERE ${where} ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`,
      ).all(...params, limit, skip);
      return { items: rows.map((row) => threadOf(row)!), totalCount };
    },
    deleteThread: async (organizationId, id) =>
      handle.transaction(() => {
        const deleted =
          prepare("DELETE FROM runs_threads WHERE id = ? AND organization_id = ?").run(id, organizationId).changes ===
          1;
        if (deleted) prepare("DELETE FROM runs_messages WHERE thread_id = ?").run(id);
        return deleted;
      }),
    async lockThread(threadId, runId, staleHolders) {
      const taken =
        prepare(
          `UPDATE runs_threads SET active_run_id = ?
         WHERE id = ? AND (active_run_id IS NULL OR active_run_id = ? OR active_run_id IN (SELECT value FROM json_each(?)))`,
        ).run(runId, threadId, runId, JSON.stringify(staleHolders)).changes === 1;
      if (taken) return { locked: true };
      const row = prepare("SELECT active_run_id FROM runs_threads WHERE id = ?").get(threadId);
      // A thread deleted in between blocks nothing.
      return row ? { locked: false, holder: optional<string>(row.active_run_id) } : { locked: true };
    },
    async unlockThread(threadId, runId) {
      // A run's turn is appended with its move here: nothing can still be pending.
      prepare("UPDATE runs_threads SET active_run_id = NULL WHERE id = ? AND active_run_id = ?").run(threadId, runId);
    },

    appendMessage: async (message) => handle.transaction(() => append(message)),
    async listMessages(organizationId, threadId, skip, limit) {
      if (!threadById(organizationId, threadId)) return undefined;
      const totalCount = Number(
        prepare("SELECT count(*) AS n FROM runs_messages WHERE thread_id = ?").get(threadId)!.n,
      );
      const rows = prepare("SELECT * FROM runs_messages WHERE thread_id = ? ORDER BY idx, id LIMIT ? OFFSET ?").all(
        threadId,
        limit,
        skip,
      );
      return { items: rows.map((row) => messageOf(row)!), totalCount };
    },
    getMessage: async (organizationId, id) => messageById(organizationId, id),
    updateMessage: async (organizationId, id, changes) =>
      handle.transaction(() => {
        const standing = messageById(organizationId, id);
        if (!standing) return undefined;
        const next: MessageRecord = {
          ...standing,
          input: changes.input ?? standing.input,
          output: changes.output ?? standing.output,
          metadata: changes.metadata ?? standing.metadata,
          updatedAt: changes.updatedAt,
        };
        prepare("UPDATE runs_messages SET input = ?, output = ?, metadata = ?, updated_at = ? WHERE id = ?").run(
          next.input,
          next.output,
          JSON.stringify(next.metadata),
          next.updatedAt.getTime(),
          id,
        );
        prepare("UPDATE runs_threads SET messages_length = messages_length + ? WHERE id = ?").run(
          lengthOf(next) - lengthOf(standing),
          standing.threadId,
        );
        return next;
      }),
    deleteMessage: async (organizationId, id) =>
      handle.transaction(() => {
        const standing = messageById(organizationId, id);
        if (!standing) return false;
        prepare("DELETE FROM runs_messages WHERE id = ?").run(id);
        prepare(
          "UPDATE runs_threads SET message_count = message_count - 1, messages_length = messages_length - ? WHERE id = ?",
        ).run(lengthOf(standing), standing.threadId);
        return true;
      }),
    latestMessages: async (threadId, limit) =>
      (
        prepare("SELECT input, output FROM runs_messages WHERE thread_id = ? ORDER BY idx DESC, id DESC LIMIT ?").all(
          threadId,
          limit,
        ) as unknown as MessageTexts[]
      ).reverse(),
  };
}
