import type { Page } from "@loom/kit/paging";
import type { StoreLifecycle } from "@loom/kit/store-open";

/** What the identity service keeps, and the one port both adapters implement. */

export interface UserRecord {
  id: string;
  email: string;
  name?: string;
  /** Organizations the user belongs to, first one is the default. */
  organizations: string[];
  /** Unique: `jwt:<sub>` for a user an access token provisioned, `local:<id>` for one no token made. */
  subject: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface OrganizationRecord {
  id: string;
  name: string;
  createdAt: Date;
}

export interface ApiKeyRecord {
  id: string;
  organizationId: string;
  /** The owning user for a user key; absent for an organization key. */
  userId?: string;
  name: string;
  /** SHA-256 of the secret, hex; the secret itself is never stored. */
  secretHash: string;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
  lastUsed: Date;
}

export type ApiKeyFilter = { organizationId: string } & ({ userId: string } | { organizationKeysOnly: true });


export interface IdentityStore extends StoreLifecycle {
  insertOrganization(org: OrganizationRecord): Promise<void>;
  /** Inserts a user; resolves false when a user with this subject exists already. */
  insertUser(user: UserRecord): Promise<boolean>;
  getUser(id: string): Promise<UserRecord | undefined>;
  findUserBySubject(subject: string): Promise<UserRecord | undefined>;
  listUsersOf(organizationId: string): Promise<UserRecord[]>;
  countUsers(): Promise<number>;

  /**
   * Takes the one-time bootstrap claim; only one caller ever gets true, so
   * concurrent first starts of several replicas bootstrap once.
   */
  claimBootstrap(at: Date): Promise<boolean>;

  insertApiKey(key: ApiKeyRecord): Promise<void>;
  getApiKey(id: string): Promise<ApiKeyRecord | undefined>;
  findApiKeyBySecretHash(secretHash: string): Promise<ApiKeyRecord | undefined>;
  renameApiKey(id: string, name: string, at: Date): Promise<ApiKeyRecord | undefined>;
  /** Sets last_used to `at` if it is still `seen` (compare-and-set: concurrent uses write once). */
  touchApiKey(id: string, at: Date, seen: Date): Promise<void>;
  deleteApiKey(id: string): Promise<boolean>;
  /** Newest first by created_at, ties by id descending. */
  listApiKeys(filter: ApiKeyFilter, skip: number, limit: number): Promise<Page<ApiKeyRecord>>;
}

