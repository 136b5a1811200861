import type { Page } from "@loom/contracts/paging";
import type { StoreLifecycle } from "@loom/store/open";

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

/** An organization's billing state, as Stripe's webhooks reported it. */
export interface SubscriptionRecord {
  /** Stripe's subscription status (`active`, `trialing`, `past_due`, `canceled`, ...). */
  status: string;
  /** The lookup key of the subscribed price, else its id; empty when unknown. */
  plan: string;
  subscriptionId: string;
  /** When Stripe created the event that said so: an older event never overwrites a newer one. */
  eventCreatedAt: Date;
}

export interface BillingRecord {
  organizationId: string;
  stripeCustomerId?: string;
  subscription?: SubscriptionRecord;
}

export type ApiKeyFilter = { organizationId: string } & ({ userId: string } | { organizationKeysOnly: true });

export interface IdentityStore extends StoreLifecycle {
  insertOrganization(org: OrganizationRecord): Promise<void>;
  getOrganization(id: string): Promise<OrganizationRecord | undefined>;
  /** The oldest organization: the one the bootstrap made. */
  firstOrganization(): Promise<OrganizationRecord | undefined>;
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

  getBilling(organizationId: string): Promise<BillingRecord | undefined>;
  /**
   * Keeps `customerId` as the organization's Stripe customer unless it has
   * one already; resolves the one kept (the first writer wins).
   */
  setStripeCustomer(organizationId: string, customerId: string): Promise<string>;
  findOrganizationByStripeCustomer(customerId: string): Promise<string | undefined>;
  /** Records the subscription unless the stored one came from a newer event; resolves whether it wrote. */
  recordSubscription(organizationId: string, subscription: SubscriptionRecord): Promise<boolean>;
  /** Whether a Stripe event with this id was handled already. */
  stripeEventSeen(eventId: string): Promise<boolean>;
  markStripeEventSeen(eventId: string, at: Date): Promise<void>;

  insertApiKey(key: ApiKeyRecord): Promise<void>;
  getApiKey(id: string): Promise<ApiKeyRecord | undefined>;
  findApiKeyBySecretHash(secretHash: string): Promise<ApiKeyRecord | undefined>;
  renameApiKey(id: string, name: string, at: Date): Promise<ApiKeyRecord | undefined>;
  /** Sets last_used to `at` if it is still `seen` (compare-and-set: concurrent uses write once). */
  touchApiKey(id: string, at: Date, seen: Date): Promise<void>;
  deleteApiKey(id: string): Promise<boolean>;
  /** How many keys an organization has (user and organization keys), or of them one user owns. */
  countApiKeys(organizationId: string, userId?: string): Promise<number>;
  /** Newest first by created_at, ties by id descending. */
  listApiKeys(filter: ApiKeyFilter, skip: number, limit: number): Promise<Page<ApiKeyRecord>>;
}
