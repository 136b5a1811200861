import type { Page } from "@loom/contracts/paging";
import type { SealedValue } from "../secret-cipher.ts";

export interface SecretRecord {
  id: string;
  organizationId: string;
  name: string;
  /** The value, sealed (secret-cipher.ts): the store never sees it in the clear. */
  sealed: SealedValue;
  createdAt: Date;
  updatedAt: Date;
  /** When a tool call last read the value; `createdAt` until then. */
  lastUsed: Date;
}

/** Fields an update may set; absent ones stay as they are. */
export type SecretPatch = Partial<Pick<SecretRecord, "name" | "sealed">>;

/**
 * Secrets, kept by the tools service beside the tools that name them. Every
 * read and write but the rotation's is scoped to one organization: another's
 * do not exist.
 */
export interface SecretStore {
  insertSecret(secret: SecretRecord): Promise<void>;
  getSecret(organizationId: string, id: string): Promise<SecretRecord | undefined>;
  /** The organization's secrets among `ids`, in no particular order; ids of none are left out. */
  getSecrets(organizationId: string, ids: readonly string[]): Promise<SecretRecord[]>;
  updateSecret(organizationId: string, id: string, patch: SecretPatch, at: Date): Promise<SecretRecord | undefined>;
  /** Sets `lastUsed` of the organization's secrets among `ids` to `at`, unless it is later already. */
  markSecretsUsed(organizationId: string, ids: readonly string[], at: Date): Promise<void>;
  deleteSecret(organizationId: string, id: string): Promise<boolean>;
  /** Newest first by created_at, ties by id. */
  listSecrets(organizationId: string, skip: number, limit: number): Promise<Page<SecretRecord>>;

  /**
   * A rotation's work: up to `limit` secrets of any organization sealed with
   * one of `keyIds`, in id order, those with ids after `afterId` only.
   */
  secretsSealedWith(keyIds: readonly string[], afterId: string, limit: number): Promise<SecretRecord[]>;
  /** How many secrets of any organization are sealed with a key that is none of `keyIds`. */
  countSecretsSealedWithout(keyIds: readonly string[]): Promise<number>;
  /**
   * Replaces a secret's sealed value with `sealed` if it is still `was` (same
   * key id and nonce: no update came in between); leaves `updatedAt` alone.
   * Whether it did.
   */
  resealSecret(organizationId: string, id: string, was: SealedValue, sealed: SealedValue): Promise<boolean>;
}
