import { newestFirstSort } from "@loom/store/mongo";
import { Binary, type Collection, type Db } from "mongodb";
import type { SealedValue } from "../secret-cipher.ts";
import type { SecretPatch, SecretRecord, SecretStore } from "./secrets.ts";

/** A secret as stored: its sealed value's parts as top-level fields (the rotation queries `keyId`), bytes as BSON binary. */
interface SecretDoc {
  _id: string;
  organizationId: string;
  name: string;
  keyId: string;
  nonce: Binary;
  ciphertext: Binary;
  createdAt: Date;
  updatedAt: Date;
  lastUsed: Date;
}

const sealedFields = ({ keyId, nonce, ciphertext }: SealedValue) => ({
  keyId,
  nonce: new Binary(nonce),
  ciphertext: new Binary(ciphertext),
});

const secretOf = (d: SecretDoc | null): SecretRecord | undefined =>
  d
    ? {
        id: d._id,
        organizationId: d.organizationId,
        name: d.name,
        sealed: {
          keyId: d.keyId,
          nonce: new Uint8Array(d.nonce.buffer),
          ciphertext: new Uint8Array(d.ciphertext.buffer),
        },
        createdAt: d.createdAt,
        updatedAt: d.updatedAt,
        lastUsed: d.lastUsed,
      }
    : undefined;

const changes = ({ name, sealed }: SecretPatch) => ({
  ...(name === undefined ? {} : { name }),
  ...(sealed ? sealedFields(sealed) : {}),
});

/** The secrets part of the MongoDB tools store: a collection of secrets, scoped by organizationId in every query. */
export function createMongoSecretStore(db: Db): SecretStore & { init(): Promise<void> } {
  const secrets: Collection<SecretDoc> = db.collection("secrets");
  return {
    async init() {
      await secrets.createIndex({ organizationId: 1, createdAt: -1, _id: -1 });
      await secrets.createIndex({ keyId: 1, _id: 1 });
    },
    async insertSecret({ id, sealed, ...rest }) {
      await secrets.insertOne({ _id: id, ...rest, ...sealedFields(sealed) });
    },
    getSecret: async (organizationId, id) => secretOf(await secrets.findOne({ _id: id, organizationId })),
    getSecrets: async (organizationId, ids) =>
      ids.length === 0
        ? []
        : (await secrets.find({ _id: { $in: [...ids] }, organizationId }).toArray()).map((d) => secretOf(d)!),
    updateSecret: async (organizationId, id, patch, at) =>
      secretOf(
        await secrets.findOneAndUpdate(
          { _id: id, organizationId },
          { $set: { ...changes(patch), updatedAt: at } },
          { returnDocument: "after" },
        ),
      ),
    async markSecretsUsed(organizationId, ids, at) {
      if (ids.length > 0)
        await secrets.updateMany({ _id: { $in: [...ids] }, organizationId }, { $max: { lastUsed: at } });
    },
    deleteSecret: async (organizationId, id) =>
      (await secrets.deleteOne({ _id: id, organizationId })).deletedCount === 1,
    async listSecrets(organizationId, skip, limit) {
      const [docs, totalCount] = await Promise.all([
        secrets.find({ organizationId }).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        secrets.countDocuments({ organizationId }),
      ]);
      return { items: docs.map((d) => secretOf(d)!), totalCount };
    },
    secretsSealedWith: async (keyIds, afterId, limit) =>
      (
        await secrets
          .find({ keyId: { $in: [...keyIds] }, _id: { $gt: afterId } })
          .sort({ _id: 1 })
          .limit(limit)
          .toArray()
      ).map((d) => secretOf(d)!),
    countSecretsSealedWithout: (keyIds) => secrets.countDocuments({ keyId: { $nin: [...keyIds] } }),
    resealSecret: async (organizationId, id, was, sealed) =>
      (
        await secrets.updateOne(
          { _id: id, organizationId, keyId: was.keyId, nonce: new Binary(was.nonce) },
          { $set: sealedFields(sealed) },
        )
      ).modifiedCount === 1,
  };
}
