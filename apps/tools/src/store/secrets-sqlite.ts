import { dateOf, newestFirstOrder, type Row, type SqliteHandle } from "@loom/store/sqlite";
import type { SecretRecord, SecretStore } from "./secrets.ts";

/** The secrets table: a schema version of the tools tables (appended in sqlite.ts). */
export const secretsMigration = `
  CREATE TABLE tools_secrets (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, name TEXT NOT NULL,
    key_id TEXT NOT NULL, nonce BLOB NOT NULL, ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, last_used INTEGER NOT NULL);
  CREATE INDEX tools_secrets_by_organization ON tools_secrets (organization_id, created_at DESC, id DESC);
  CREATE INDEX tools_secrets_by_key ON tools_secrets (key_id, id);`;

const secretOf = (row: Row | undefined): SecretRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    name: row.name as string,
    sealed: {
      keyId: row.key_id as string,
      nonce: new Uint8Array(row.nonce as Uint8Array),
      ciphertext: new Uint8Array(row.ciphertext as Uint8Array),
    },
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
    lastUsed: dateOf(row.last_used)!,
  };

/** Ids bound as one JSON array (`json_each`), so each query is one cached statement whatever their number. */
const inIds = "id IN (SELECT value FROM json_each(?))";

/** The secrets part of the SQLite tools store: one row per secret, its sealed value in three columns. */
export function createSqliteSecretStore({ prepare }: SqliteHandle): SecretStore {
  return {
    async insertSecret(s) {
      prepare(
        `INSERT INTO tools_secrets (id, organization_id, name, key_id, nonce, ciphertext, created_at, updated_at, last_used)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        s.id,
        s.organizationId,
        s.name,
        s.sealed.keyId,
        s.sealed.nonce,
        s.sealed.ciphertext,
        s.createdAt.getTime(),
        s.updatedAt.getTime(),
        s.lastUsed.getTime(),
      );
    },
    getSecret: async (organizationId, id) =>
      secretOf(prepare("SELECT * FROM tools_secrets WHERE id = ? AND organization_id = ?").get(id, organizationId)),
    async getSecrets(organizationId, ids) {
      if (ids.length === 0) return [];
      return prepare(`SELECT * FROM tools_secrets WHERE organization_id = ? AND ${inIds}`)
        .all(organizationId, JSON.stringify(ids))
        .map((row) => secretOf(row)!);
    },
    // One statement for every patch: a field the patch leaves out (NULL here) keeps its value.
    updateSecret: async (organizationId, id, patch, at) =>
      secretOf(
        prepare(
          `UPDATE tools_secrets SET name = coalesce(?, name), key_id = coalesce(?, key_id), nonce = coalesce(?, nonce),
             ciphertext = coalesce(?, ciphertext), updated_at = ?
           WHERE id = ? AND organization_id = ? RETURNING *`,
        ).get(
          patch.name ?? null,
          patch.sealed?.keyId ?? null,
          patch.sealed?.nonce ?? null,
          patch.sealed?.ciphertext ?? null,
          at.getTime(),
          id,
          organizationId,
        ),
      ),
    async markSecretsUsed(organizationId, ids, at) {
      if (ids.length === 0) return;
      prepare(`UPDATE tools_secrets SET last_used = max(last_used, ?) WHERE organization_id = ? AND ${inIds}`).run(
        at.getTime(),
        organizationId,
        JSON.stringify(ids),
      );
    },
    deleteSecret: async (organizationId, id) =>
      prepare("DELETE FROM tools_secrets WHERE id = ? AND organization_id = ?").run(id, organizationId).changes === 1,
    async listSecrets(organizationId, skip, limit) {
      const totalCount = Number(
        prepare("SELECT count(*) AS n FROM tools_secrets WHERE organization_id = ?").get(organizationId)!.n,
      );
      const items = prepare(
        `SELECT * FROM tools_secrets WHERE organization_id = ? ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`,
      ).all(organizationId, limit, skip);
      return { items: items.map((row) => secretOf(row)!), totalCount };
    },
    secretsSealedWith: async (keyIds, afterId, limit) =>
      prepare(
        "SELECT * FROM tools_secrets WHERE key_id IN (SELECT value FROM json_each(?)) AND id > ? ORDER BY id LIMIT ?",
      )
        .all(JSON.stringify(keyIds), afterId, limit)
        .map((row) => secretOf(row)!),
    countSecretsSealedWithout: async (keyIds) =>
      Number(
        prepare("SELECT count(*) AS n FROM tools_secrets WHERE key_id NOT IN (SELECT value FROM json_each(?))").get(
          JSON.stringify(keyIds),
        )!.n,
      ),
    resealSecret: async (organizationId, id, was, sealed) =>
      prepare(
        `UPDATE tools_secrets SET key_id = ?, nonce = ?, ciphertext = ?
         WHERE id = ? AND organization_id = ? AND key_id = ? AND nonce = ?`,
      ).run(sealed.keyId, sealed.nonce, sealed.ciphertext, id, organizationId, was.keyId, was.nonce).changes === 1,
  };
}
