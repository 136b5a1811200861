import { createHash } from "node:crypto";
import { newId } from "@loom/contracts/ids";
import { dateOf, optional, type Row, type SqliteHandle, sqliteLifecycle } from "@loom/store/sqlite";
import { flooredAt, termsWorthScoring } from "./bm25.ts";
import type { ChunkIndex, IndexedChunk, KnowledgeScope, RankedChunk } from "./port.ts";
import { queryWordsOf } from "./terms.ts";
import { checkDimension, dimensionOf, vectorBytes, vectorOf } from "./vectors.ts";

/**
 * Schema versions of the chunk index's tables (kit `migrate`): append, never edit. Chunks are read by rowid (what
 * the FTS5 and vec0 tables hold), never by their public id: no random-key index on the write path.
 */
const migrations = [
  `CREATE TABLE knowledge_index_bases (organization_id TEXT NOT NULL, knowledge_base_id TEXT NOT NULL,
     dimension INTEGER, PRIMARY KEY (organization_id, knowledge_base_id));
   CREATE TABLE knowledge_index_assets (organization_id TEXT NOT NULL, knowledge_base_id TEXT NOT NULL,
     bucket_id TEXT NOT NULL, path TEXT NOT NULL, version TEXT NOT NULL, chunk_count INTEGER NOT NULL,
     indexed_at INTEGER NOT NULL, PRIMARY KEY (organization_id, knowledge_base_id, bucket_id, path));
   CREATE TABLE knowledge_index_chunks (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL,
     organization_id TEXT NOT NULL, knowledge_base_id TEXT NOT NULL, bucket_id TEXT NOT NULL, path TEXT NOT NULL,
     position INTEGER NOT NULL, start_offset INTEGER, end_offset INTEGER, headings TEXT, text TEXT NOT NULL);
   CREATE INDEX knowledge_index_chunks_by_asset
     ON knowledge_index_chunks (organization_id, knowledge_base_id, bucket_id, path, position);`,
];

/** A name of a knowledge base's own, for its own tables: from its organization and id. */
const tableNameOf = (kind: "terms" | "vectors", { organizationId, knowledgeBaseId }: KnowledgeScope): string =>
  `knowledge_index_${kind}_${createHash("sha256").update(`${organizationId}/${knowledgeBaseId}`).digest("hex").slice(0, 32)}`;

/**
 * The tables of one knowledge base: an FTS5 table of its chunks' texts and, once it has embeddings, a sqlite-vec
 * `vec0` table of them. One of each per knowledge base because FTS5 keeps BM25's statistics (chunk count, mean
 * length, how many chunks have a term) per table, so in a shared one other knowledge bases' chunks would move
 * every score; and a `vec0` table has one dimension. Both are keyed by the rowid of the chunk in
 * knowledge_index_chunks; the FTS5 table is contentless (the text is in knowledge_index_chunks).
 */
interface BaseTables {
  terms: string;
  /** Absent until the knowledge base has embeddings. */
  vectors?: string;
  dimension?: number;
}

/** Porter stemming over unicode61 words without diacritics: terms.ts does the same for MongoDB. */
const createTermsTable = (table: string) =>
  `CREATE VIRTUAL TABLE IF NOT EXISTS ${table} USING fts5(text, content='', contentless_delete=1,
     tokenize='porter unicode61 remove_diacritics 2')`;

/** Its embeddings, compared by cosine distance (1 - cosine similarity). */
const createVectorsTable = (table: string, dimension: number) =>
  `CREATE VIRTUAL TABLE IF NOT EXISTS ${table} USING vec0(embedding float[${dimension}] distance_metric=cosine)`;

/** The most neighbours a `vec0` search returns (sqlite-vec's bound on `k`). */
const maxNeighbours = 4096;

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
 * The chunk index on SQLite: a table of chunks (text, position), one of assets and their versions, and per knowledge
 * base an FTS5 table for BM25 and a sqlite-vec table for cosine search (`BaseTables`). An asset's replacement is one
 * transaction.
 *
 * Statements on the per-knowledge-base tables are prepared for each call, not kept by the handle (one set per
 * knowledge base would grow without bound); they always run in a transaction that a statement of the handle's
 * (`prepare`) also writes, so the commit group knows it has something to sync.
 */
export function createSqliteChunkIndex(handle: SqliteHandle): ChunkIndex {
  const { db, prepare } = handle;
  const scopeOf = (scope: KnowledgeScope) => [scope.organizationId, scope.knowledgeBaseId] as const;
  const baseOf = (scope: KnowledgeScope): BaseTables | undefined => {
    const row = prepare(
      "SELECT dimension FROM knowledge_index_bases WHERE organization_id = ? AND knowledge_base_id = ?",
    ).get(...scopeOf(scope));
    if (!row) return undefined;
    const dimension = optional<number>(row.dimension);
    return {
      terms: tableNameOf("terms", scope),
      ...(dimension === undefined ? {} : { vectors: tableNameOf("vectors", scope), dimension }),
    };
  };

  /** Deletes an asset's chunks, their terms and their embeddings. */
  const deleteChunks = (scope: KnowledgeScope, tables: BaseTables, bucketId: string, path: string): void => {
    const rowids = prepare(
      `DELETE FROM knowledge_index_chunks
       WHERE organization_id = ? AND knowledge_base_id = ? AND bucket_id = ? AND path = ? RETURNING rowid`,
    ).all(...scopeOf(scope), bucketId, path) as { rowid: number }[];
    if (rowids.length === 0) return;
    const deleteTerms = db.prepare(`DELETE FROM ${tables.terms} WHERE rowid = ?`);
    const deleteVector = tables.vectors ? db.prepare(`DELETE FROM ${tables.vectors} WHERE rowid = ?`) : undefined;
    for (const { rowid } of rowids) {
      deleteTerms.run(rowid);
      deleteVector?.run(BigInt(rowid));
    }
  };

  const chunkCountOf = (scope: KnowledgeScope): number =>
    (
      prepare(
        `SELECT coalesce(sum(chunk_count), 0) AS count FROM knowledge_index_assets
         WHERE organization_id = ? AND knowledge_base_id = ?`,
      ).get(...scopeOf(scope)) as { count: number }
    ).count;

  /** The chunks of these rowids, with their embeddings. */
  const chunksByRowid = (scope: KnowledgeScope, tables: BaseTables, rowids: readonly number[]) =>
    new Map(
      db
        .prepare(
          `SELECT c.*, ${tables.vectors ? "v.embedding" : "NULL AS embedding"} FROM knowledge_index_chunks c
           ${tables.vectors ? `LEFT JOIN ${tables.vectors} v ON v.rowid = c.rowid` : ""}
           WHERE c.organization_id = ? AND c.knowledge_base_id = ? AND c.rowid IN (SELECT value FROM json_each(?))`,
        )
        .all(...scopeOf(scope), JSON.stringify(rowids))
        .map((row) => [row.rowid as number, chunkOf(row)]),
    );

  /** The found chunks, as ranked, with their scores. */
  const ranked = (scope: KnowledgeScope, tables: BaseTables, found: { rowid: number; score: number }[]) => {
    const chunks = chunksByRowid(
      scope,
      tables,
      found.map((hit) => hit.rowid),
    );
    return found.flatMap(({ rowid, score }): RankedChunk[] => {
      const chunk = chunks.get(rowid);
      return chunk ? [{ chunk, score }] : [];
    });
  };

  return {
    ...sqliteLifecycle(handle, "knowledge_index", migrations),

    async replaceAsset(scope, { bucketId, path, version }, chunks, at) {
      const dimension = dimensionOf(chunks.map((chunk) => chunk.embedding));
      handle.transaction(() => {
        const before = baseOf(scope);
        checkDimension(before?.dimension, dimension, "an embedding of these chunks");
        prepare(
          `INSERT INTO knowledge_index_bases (organization_id, knowledge_base_id, dimension) VALUES (?, ?, ?)
           ON CONFLICT DO UPDATE SET dimension = coalesce(dimension, excluded.dimension)`,
        ).run(...scopeOf(scope), dimension ?? null);
        const tables = baseOf(scope)!;
        db.exec(createTermsTable(tables.terms));
        if (tables.vectors) db.exec(createVectorsTable(tables.vectors, tables.dimension!));
        deleteChunks(scope, tables, bucketId, path);
        const insertChunk = prepare(
          `INSERT INTO knowledge_index_chunks (id, organization_id, knowledge_base_id, bucket_id, path, position,
             start_offset, end_offset, headings, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rowid`,
        );
        const insertTerms = db.prepare(`INSERT INTO ${tables.terms} (rowid, text) VALUES (?, ?)`);
        const insertVector = tables.vectors
          ? db.prepare(`INSERT INTO ${tables.vectors} (rowid, embedding) VALUES (?, ?)`)
          : undefined;
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
          ) as { rowid: number };
          insertTerms.run(rowid, text);
          // vec0 takes only an integer rowid, which node:sqlite binds for a BigInt.
          if (embedding) insertVector!.run(BigInt(rowid), vectorBytes(embedding));
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
        const tables = baseOf(scope);
        if (tables) deleteChunks(scope, tables, bucketId, path);
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
        prepare(`DELETE FROM knowledge_index_bases ${where}`).run(...scopeOf(scope));
        prepare(`DELETE FROM knowledge_index_chunks ${where}`).run(...scopeOf(scope));
        prepare(`DELETE FROM knowledge_index_assets ${where}`).run(...scopeOf(scope));
        db.exec(`DROP TABLE IF EXISTS ${tableNameOf("terms", scope)}`);
        db.exec(`DROP TABLE IF EXISTS ${tableNameOf("vectors", scope)}`);
      });
    },

    countChunks: async (scope) => chunkCountOf(scope),

    // Every replacement and removal is one transaction: nothing is ever left behind.
    sweep: async () => {},

    async keywordSearch(scope, query, limit) {
      // The words as typed: FTS5 stems them itself.
      const words = queryWordsOf(query).map(({ word }) => word);
      const tables = baseOf(scope);
      if (!tables || words.length === 0 || limit <= 0) return [];
      const chunkCount = chunkCountOf(scope);
      const countMatching = db.prepare(
        `SELECT count(*) AS matching FROM (SELECT 1 FROM ${tables.terms} WHERE ${tables.terms} MATCH ? LIMIT ?)`,
      );
      const counted = words.map((term) => ({
        term,
        matching: (countMatching.get(matchExpression([term]), flooredAt(chunkCount)) as { matching: number }).matching,
      }));
      const terms = termsWorthScoring(counted, chunkCount);
      if (terms.length === 0) return [];
      const found = db
        .prepare(
          `SELECT rowid, bm25(${tables.terms}) AS rank FROM ${tables.terms} WHERE ${tables.terms} MATCH ?
           ORDER BY rank, rowid LIMIT ?`,
        )
        .all(matchExpression(terms), limit) as { rowid: number; rank: number }[];
      // FTS5's bm25() is negative, lower is better: its negation is the BM25 score.
      return ranked(
        scope,
        tables,
        found.map(({ rowid, rank }) => ({ rowid, score: -rank })),
      );
    },

    async vectorSearch(scope, vector, limit) {
      const tables = baseOf(scope);
      if (!tables?.vectors || limit <= 0) return [];
      checkDimension(tables.dimension, vector.length, "the query's embedding");
      // An exact k-nearest-neighbour scan in sqlite-vec (it has no approximate index yet).
      const found = db
        .prepare(`SELECT rowid, distance FROM ${tables.vectors} WHERE embedding MATCH ? AND k = ? ORDER BY distance`)
        .all(vectorBytes(vector), Math.min(limit, maxNeighbours)) as { rowid: number; distance: number }[];
      return ranked(
        scope,
        tables,
        found.map(({ rowid, distance }) => ({ rowid, score: 1 - distance })),
      );
    },
  };
}
