import { createHash } from "node:crypto";
import { newId } from "@loom/contracts/ids";
import { dateOf, optional, type Row, type SqliteHandle, sqliteLifecycle } from "@loom/store/sqlite";
import type { ChunkIndex, IndexedChunk, KnowledgeScope, RankedChunk } from "./port.ts";
import { queryWordsOf } from "./terms.ts";
import { bestOf, checkDimension, cosineOf, dimensionOf, lengthOf, vectorBytes, vectorOf } from "./vectors.ts";

/** Schema versions of the chunk index's tables (kit `migrate`): append, never edit. */
const migrations = [
  `CREATE TABLE knowledge_index_bases (organization_id TEXT NOT NULL, knowledge_base_id TEXT NOT NULL,
     terms_table TEXT NOT NULL, dimension INTEGER, PRIMARY KEY (organization_id, knowledge_base_id));
   CREATE TABLE knowledge_index_assets (organization_id TEXT NOT NULL, knowledge_base_id TEXT NOT NULL,
     bucket_id TEXT NOT NULL, path TEXT NOT NULL, version TEXT NOT NULL, chunk_count INTEGER NOT NULL,
     indexed_at INTEGER NOT NULL, PRIMARY KEY (organization_id, knowledge_base_id, bucket_id, path));
   CREATE TABLE knowledge_index_chunks (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
     organization_id TEXT NOT NULL, knowledge_base_id TEXT NOT NULL, bucket_id TEXT NOT NULL, path TEXT NOT NULL,
     position INTEGER NOT NULL, start_offset INTEGER, end_offset INTEGER, headings TEXT, text TEXT NOT NULL,
     embedding BLOB);
   CREATE INDEX knowledge_index_chunks_by_asset
     ON knowledge_index_chunks (organization_id, knowledge_base_id, bucket_id, path, position);`,
];

/**
 * The FTS5 table of one knowledge base's chunk texts, named from its organization and id. One table per knowledge
 * base because FTS5 keeps BM25's statistics (chunk count, mean length, how many chunks have a term) per table: in
 * a shared one, other knowledge bases' chunks would move every score. Contentless: the text is in
 * knowledge_index_chunks, whose rowid each row shares.
 */
const termsTableOf = ({ organizationId, knowledgeBaseId }: KnowledgeScope): string =>
  `knowledge_index_terms_${createHash("sha256").update(`${organizationId}/${knowledgeBaseId}`).digest("hex").slice(0, 32)}`;

/** Porter stemming over unicode61 words without diacritics: terms.ts does the same for MongoDB. */
const createTermsTable = (table: string) =>
  `CREATE VIRTUAL TABLE IF NOT EXISTS ${table} USING fts5(text, content='', contentless_delete=1,
     tokenize='porter unicode61 remove_diacritics 2')`;

/** A query as an FTS5 expression: each word a quoted string, any of them: nothing the user types is FTS5 syntax. */
const matchExpression = (words: readonly string[]): string =>
  words.map((word) => `"${word.replaceAll('"', '""')}"`).join(" OR ");

const chunkOf = (row: Row): IndexedChunk => {
  const start = optional<number>(row.start_offset);
  const end = optional<number>(row.end_offset);
  const headings = optional<string>(row.headings);
  const embedding = optional<Uint8Array>(row.embedding);
  return {
    id: row.id as string,
    bucketId: row.bucket_id as string,
    path: row.path as string,
    text: row.text as string,
    position: {
      index: row.position as number,
      ...(start === undefined ? {} : { start }),
      ...(end === undefined ? {} : { end }),
      ...(headings === undefined ? {} : { headings: JSON.parse(headings) as string[] }),
    },
    ...(embedding ? { embedding: vectorOf(embedding) } : {}),
  };
};

/**
 * The chunk index on SQLite: a table of chunks (text, position, embedding as a Float32 BLOB), one of assets and
 * their versions, and per knowledge base an FTS5 table for BM25. An asset's replacement is one transaction.
 *
 * Statements on the per-knowledge-base FTS5 tables are prepared for each call, not kept by the handle (one set per
 * knowledge base would grow without bound); they always run in a transaction that a statement of the handle's
 * (`prepare`) also writes, so the commit group knows it has something to sync.
 */
export function createSqliteChunkIndex(handle: SqliteHandle): ChunkIndex {
  const { db, prepare } = handle;
  const scopeOf = (scope: KnowledgeScope) => [scope.organizationId, scope.knowledgeBaseId] as const;
  const baseOf = (scope: KnowledgeScope) =>
    prepare(
      "SELECT terms_table, dimension FROM knowledge_index_bases WHERE organization_id = ? AND knowledge_base_id = ?",
    ).get(...scopeOf(scope)) as { terms_table: string; dimension: number | null } | undefined;

  /** Deletes an asset's chunks and their terms; how many there were. */
  const deleteChunks = (scope: KnowledgeScope, table: string, bucketId: string, path: string): number => {
    const where = "organization_id = ? AND knowledge_base_id = ? AND bucket_id = ? AND path = ?";
    db.prepare(`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM knowledge_index_chunks WHERE ${where})`).run(
      ...scopeOf(scope),
      bucketId,
      path,
    );
    return Number(
      prepare(`DELETE FROM knowledge_index_chunks WHERE ${where}`).run(...scopeOf(scope), bucketId, path).changes,
    );
  };

  /** The chunks of these rowids, in their order. */
  const chunksByRowid = (scope: KnowledgeScope, rowids: readonly number[]): Map<number, IndexedChunk> =>
    new Map(
      prepare(
        `SELECT * FROM knowledge_index_chunks
         WHERE organization_id = ? AND knowledge_base_id = ? AND rowid IN (SELECT value FROM json_each(?))`,
      )
        .all(...scopeOf(scope), JSON.stringify(rowids))
        .map((row) => [row.rowid as number, chunkOf(row)]),
    );

  return {
    ...sqliteLifecycle(handle, "knowledge_index", migrations),

    async replaceAsset(scope, { bucketId, path, version }, chunks, at) {
      const dimension = dimensionOf(chunks.map((chunk) => chunk.embedding));
      handle.transaction(() => {
        const table = termsTableOf(scope);
        const base = baseOf(scope);
        checkDimension(base?.dimension ?? undefined, dimension, "an embedding of these chunks");
        prepare(
          `INSERT INTO knowledge_index_bases (organization_id, knowledge_base_id, terms_table, dimension) VALUES (?, ?, ?, ?)
           ON CONFLICT DO UPDATE SET dimension = coalesce(dimension, excluded.dimension)`,
        ).run(...scopeOf(scope), table, dimension ?? null);
        db.exec(createTermsTable(table));
        deleteChunks(scope, table, bucketId, path);
        const insertChunk = prepare(
          `INSERT INTO knowledge_index_chunks (id, organization_id, knowledge_base_id, bucket_id, path, position,
             start_offset, end_offset, headings, text, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rowid`,
        );
        const insertTerms = db.prepare(`INSERT INTO ${table} (rowid, text) VALUES (?, ?)`);
        for (const { text, position, embedding } of chunks) {
          const { rowid } = insertChunk.get(
            newId(),
            ...scopeOf(scope),
            bucketId,
            path,
            position.index,
            position.start ?? null,
            position.end ?? null,
            position.headings ? JSON.stringify(position.headings) : null,
            text,
            embedding ? vectorBytes(embedding) : null,
          ) as { rowid: number };
          insertTerms.run(rowid, text);
        }
        prepare(
          `INSERT INTO knowledge_index_assets (organization_id, knowledge_base_id, bucket_id, path, version, chunk_count, indexed_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT DO UPDATE SET version = excluded.version, chunk_count = excluded.chunk_count, indexed_at = excluded.indexed_at`,
        ).run(...scopeOf(scope), bucketId, path, version, chunks.length, at.getTime());
      });
    },

    async removeAsset(scope, { bucketId, path }) {
      return handle.transaction(() => {
        const removed = prepare(
          "DELETE FROM knowledge_index_assets WHERE organization_id = ? AND knowledge_base_id = ? AND bucket_id = ? AND path = ?",
        ).run(...scopeOf(scope), bucketId, path).changes;
        const base = baseOf(scope);
        if (base) deleteChunks(scope, base.terms_table, bucketId, path);
        return removed > 0;
      });
    },

    indexedAssets: async (scope) =>
      prepare(
        `SELECT * FROM knowledge_index_assets WHERE organization_id = ? AND knowledge_base_id = ?
         ORDER BY bucket_id, path`,
      )
        .all(...scopeOf(scope))
        .map((row) => ({
          bucketId: row.bucket_id as string,
          path: row.path as string,
          version: row.version as string,
          chunkCount: row.chunk_count as number,
          indexedAt: dateOf(row.indexed_at)!,
        })),

    async removeKnowledgeBase(scope) {
      handle.transaction(() => {
        const where = "WHERE organization_id = ? AND knowledge_base_id = ?";
        const base = prepare(`DELETE FROM knowledge_index_bases ${where} RETURNING terms_table`).get(
          ...scopeOf(scope),
        ) as { terms_table: string } | undefined;
        prepare(`DELETE FROM knowledge_index_chunks ${where}`).run(...scopeOf(scope));
        prepare(`DELETE FROM knowledge_index_assets ${where}`).run(...scopeOf(scope));
        if (base) db.exec(`DROP TABLE IF EXISTS ${base.terms_table}`);
      });
    },

    countChunks: async (scope) =>
      (
        prepare(
          `SELECT coalesce(sum(chunk_count), 0) AS count FROM knowledge_index_assets
           WHERE organization_id = ? AND knowledge_base_id = ?`,
        ).get(...scopeOf(scope)) as { count: number }
      ).count,

    // Every replacement and removal is one transaction: nothing is ever left behind.
    sweep: async () => {},

    async keywordSearch(scope, query, limit) {
      const words = queryWordsOf(query);
      const base = baseOf(scope);
      if (!base || words.length === 0 || limit <= 0) return [];
      const table = base.terms_table;
      const found = db
        .prepare(
          `SELECT rowid, bm25(${table}) AS rank FROM ${table} WHERE ${table} MATCH ? ORDER BY rank, rowid LIMIT ?`,
        )
        .all(matchExpression(words), limit) as { rowid: number; rank: number }[];
      const chunks = chunksByRowid(
        scope,
        found.map((hit) => hit.rowid),
      );
      // FTS5's bm25() is negative, lower is better: its negation is the BM25 score.
      return found.flatMap(({ rowid, rank }) => {
        const chunk = chunks.get(rowid);
        return chunk ? [{ chunk, score: -rank }] : [];
      });
    },

    async vectorSearch(scope, vector, limit) {
      const base = baseOf(scope);
      if (!base || base.dimension === null || limit <= 0) return [];
      checkDimension(base.dimension, vector.length, "the query's embedding");
      const queryLength = lengthOf(vector);
      const best = bestOf<number>(limit);
      const rows = prepare(
        `SELECT rowid, embedding FROM knowledge_index_chunks
         WHERE organization_id = ? AND knowledge_base_id = ? AND embedding IS NOT NULL`,
      ).iterate(...scopeOf(scope)) as Iterable<{ rowid: number; embedding: Uint8Array }>;
      for (const { rowid, embedding } of rows) best.offer(rowid, cosineOf(vector, queryLength, embedding));
      const chunks = chunksByRowid(
        scope,
        best.best().map((hit) => hit.item),
      );
      return best.best().flatMap(({ item, score }): RankedChunk[] => {
        const chunk = chunks.get(item);
        return chunk ? [{ chunk, score }] : [];
      });
    },
  };
}
