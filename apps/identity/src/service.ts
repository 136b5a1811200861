import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Bus } from "@loom/bus/bus";
import { invalidArgument, notFound, permissionDenied, unauthenticated } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { subjects } from "@loom/contracts/subjects";
import { nameProblem } from "@loom/contracts/text";
import { type ApiKeyOwner, IdentityService } from "@loom/proto/identity/v1/identity_pb";
import { type Principal, requirePrincipal } from "@loom/server/principal";
import { type RpcService, storeBackedService } from "@loom/server/rpc-service";
import type { Logger } from "@loom/telemetry/logger";
import type { AccessTokenVerifier, TokenClaims } from "./access-tokens.ts";
import { hashApiKeySecret, looksLikeApiKey, newApiKey } from "./api-key-secret.ts";
import type { ApiKeyFilter, ApiKeyRecord, IdentityStore, UserRecord } from "./store/port.ts";

export interface IdentityDeps {
  store: IdentityStore;
  /** Absent: access tokens are not accepted, only API keys. */
  accessTokens?: AccessTokenVerifier;
  logger: Logger;
  /** Where key deletions are announced, so callers that cache answers drop them. */
  bus?: Bus;
  /** How many API keys one user may own, and one organization may have of every kind. */
  apiKeyCaps?: ApiKeyCaps;
  now?: () => Date;
}

export interface ApiKeyCaps {
  perUser: number;
  perOrganization: number;
}

/** The defaults of API_KEYS_PER_USER and API_KEYS_PER_ORGANIZATION (config.ts). */
export const defaultApiKeyCaps: ApiKeyCaps = { perUser: 100, perOrganization: 1_000 };

/** How long a caller may reuse an Authenticate answer (revocations are announced on the bus). */
export const authenticationCacheMs = 30_000;

interface Authenticated {
  principal: Principal & { apiKeyId: string };
  cacheableUntil: Date;
}

/** After its first use, a key's `last_used` is written at most this often (docs/behaviour.md §3). */
const lastUsedResolutionMs = 60_000;
export const apiKeyNameMax = 200;
/** The `Retry-After` of a refusal past an API key cap: the cap lifts only when a key is deleted. */
const apiKeyCapRetryAfterSeconds = 60;

export function createIdentityService(deps: IdentityDeps): RpcService {
  const { store } = deps;
  const now = deps.now ?? (() => new Date());
  const caps = deps.apiKeyCaps ?? defaultApiKeyCaps;

  async function authenticateApiKey(credential: string): Promise<Authenticated> {
    const hash = hashApiKeySecret(credential);
    // The store finds the key by the hash through a unique index; nothing compares secrets (docs/decisions.md).
    const key = await store.findApiKeyBySecretHash(hash);
    if (!key) throw unauthenticated();
    const at = now();
    const neverUsed = key.lastUsed.getTime() === key.createdAt.getTime();
    if (neverUsed || at.getTime() - key.lastUsed.getTime() >= lastUsedResolutionMs)
      await store.touchApiKey(key.id, at, key.lastUsed);
    return {
      principal: { userId: key.userId ?? key.createdBy, organizationId: key.organizationId, apiKeyId: key.id },
      cacheableUntil: new Date(at.getTime() + authenticationCacheMs),
    };
  }

  async function authenticateToken(token: string): Promise<Authenticated> {
    if (!deps.accessTokens) throw unauthenticated();
    const claims = await deps.accessTokens.verify(token);
    const user = (await store.findUserBySubject(tokenSubject(claims))) ?? (await provisionUser(claims));
    const organizationId = claims.organizationId ?? user.organizations[0];
    if (!organizationId || !user.organizations.includes(organizationId)) {
      throw permissionDenied("the token's organization is not one of the user's organizations");
    }
    const until = Math.min(now().getTime() + authenticationCacheMs, claims.expiresAt.getTime());
    return { principal: { userId: user.id, organizationId, apiKeyId: "" }, cacheableUntil: new Date(until) };
  }

  /** A first valid token provisions its user into a personal organization. */
  async function provisionUser(claims: TokenClaims): Promise<UserRecord> {
    const at = now();
    const organizationId = newId();
    const label = claims.name ?? claims.email ?? claims.subject;
    await store.insertOrganization({ id: organizationId, name: `${label}'s organization`, createdAt: at });
    const user: UserRecord = {
      id: newId(),
      subject: tokenSubject(claims),
      email: claims.email ?? `${claims.subject}@users.loom.invalid`,
      name: claims.name,
      organizations: [organizationId],
      createdAt: at,
      updatedAt: at,
    };
    if (await store.insertUser(user)) {
      deps.logger.info({ user_id: user.id }, "provisioned a user from an access token");
      return user;
    }
    // Another request provisioned the same subject first; use theirs.
    const existing = await store.findUserBySubject(tokenSubject(claims));
    if (!existing) throw new Error("user vanished during provisioning");
    return existing;
  }

  /** A key the principal may see: its organization's keys, and of user keys only its own. */
  async function visibleKey(principal: Principal, apiKeyId: string): Promise<ApiKeyRecord> {
    const key = await store.getApiKey(apiKeyId);
    if (
      !key ||
      key.organizationId !== principal.organizationId ||
      (key.userId !== undefined && key.userId !== principal.userId)
    ) {
      throw notFound("api key");
    }
    return key;
  }

  /** Which keys an owner names, after checking the principal may act for it. */
  function ownedKeys(principal: Principal, owner: ApiKeyOwner | undefined): ApiKeyFilter & { userId?: string } {
    switch (owner?.owner.case) {
      case "userId":
        if (owner.owner.value !== principal.userId)
          throw permissionDenied("you may manage only your own user API keys");
        return { organizationId: principal.organizationId, userId: principal.userId };
      case "organizationId":
        if (owner.owner.value !== principal.organizationId) throw notFound("organization");
        return { organizationId: principal.organizationId, organizationKeysOnly: true };
      default:
        throw invalidArgument([{ path: "owner", message: "a user or an organization must own the key" }]);
    }
  }

  /**
   * Refuses a key that took its owner past a cap. Checked after the insert,
   * then undone: two concurrent creates at the edge may both be refused, but
   * never both kept (each counts after its own insert, so the later count
   * sees both), on any store and any number of replicas.
   */
  async function undoIfOverCap(key: ApiKeyRecord): Promise<void> {
    const [ofOrganization, ofUser] = await Promise.all([
      store.countApiKeys(key.organizationId),
      key.userId === undefined ? 0 : store.countApiKeys(key.organizationId, key.userId),
    ]);
    const problem =
      ofUser > caps.perUser
        ? `a user may own at most ${caps.perUser} API keys; delete one to create another`
        : ofOrganization > caps.perOrganization
          ? `an organization may have at most ${caps.perOrganization} API keys; delete one to create another`
          : undefined;
    if (!problem) return;
    await store.deleteApiKey(key.id);
    // 429 as every other limit answers (docs/decisions.md, "Caps on API keys"); only deleting a key makes room, so the wait is long.
    throw new ConnectError(problem, Code.ResourceExhausted, { "retry-after": String(apiKeyCapRetryAfterSeconds) });
  }

  function checkName(name: string): void {
    const problem = nameProblem(name, 1, apiKeyNameMax);
    if (problem) throw invalidArgument([{ path: "body.name", message: problem }]);
  }

  const impl: ServiceImpl<typeof IdentityService> = {
    async authenticate(req) {
      const credential = req.credential.trim();
      if (credential === "") throw unauthenticated();
      let answer: Authenticated;
      if (looksLikeApiKey(credential)) answer = await authenticateApiKey(credential);
      else if (credential.split(".").length === 3) answer = await authenticateToken(credential);
      else throw unauthenticated();
      return { principal: answer.principal, cacheableUntil: timestampFromDate(answer.cacheableUntil) };
    },

    async listUsers(_req, ctx) {
      const principal = requirePrincipal(ctx);
      const users = await store.listUsersOf(principal.organizationId);
      return { users: users.map(userMessage) };
    },

    async getUser(req, ctx) {
      const principal = requirePrincipal(ctx);
      const user = await store.getUser(req.userId);
      // Only the members of the caller's organization are its to read, as ListUsers lists them.
      if (!user?.organizations.includes(principal.organizationId)) throw notFound("user");
      return { user: userMessage(user) };
    },

    async createApiKey(req, ctx) {
      const principal = requirePrincipal(ctx);
      const owner = ownedKeys(principal, req.owner);
      checkName(req.name);
      const at = now();
      const { record: key, value } = newApiKey(
        { organizationId: principal.organizationId, userId: owner.userId, name: req.name, createdBy: principal.userId },
        at,
      );
      await store.insertApiKey(key);
      await undoIfOverCap(key);
      return { apiKey: apiKeyMessage(key), value };
    },

    async getApiKey(req, ctx) {
      return { apiKey: apiKeyMessage(await visibleKey(requirePrincipal(ctx), req.apiKeyId)) };
    },

    async updateApiKey(req, ctx) {
      const key = await visibleKey(requirePrincipal(ctx), req.apiKeyId);
      if (req.name === undefined) return { apiKey: apiKeyMessage(key) };
      checkName(req.name);
      const renamed = await store.renameApiKey(key.id, req.name, now());
      if (!renamed) throw notFound("api key");
      return { apiKey: apiKeyMessage(renamed) };
    },

    async deleteApiKey(req, ctx) {
      const key = await visibleKey(requirePrincipal(ctx), req.apiKeyId);
      if (!(await store.deleteApiKey(key.id))) throw notFound("api key");
      await deps.bus?.publish(subjects.revokedApiKeys, new TextEncoder().encode(key.id));
      return {};
    },

    async listApiKeys(req, ctx) {
      const filter = ownedKeys(requirePrincipal(ctx), req.owner);
      const window = pageWindow(req.page);
      const { items, totalCount } = await store.listApiKeys(filter, window.skip, window.pageSize);
      return { apiKeys: items.map(apiKeyMessage), page: pageInfo(window, totalCount) };
    },
  };

  return storeBackedService("identity", (router) => router.service(IdentityService, impl), store);
}

/**
 * Token subjects live in their own namespace, apart from `local:` users, so no
 * token can name its way into a user it did not provision.
 */
function tokenSubject(claims: TokenClaims): string {
  return `jwt:${claims.subject}`;
}

function userMessage(u: UserRecord) {
  return {
    userId: u.id,
    email: u.email,
    name: u.name,
    organizations: u.organizations,
    createdAt: timestampFromDate(u.createdAt),
    updatedAt: timestampFromDate(u.updatedAt),
  };
}

function apiKeyMessage(key: ApiKeyRecord) {
  return {
    apiKeyId: key.id,
    organizationId: key.organizationId,
    userId: key.userId ?? "",
    name: key.name,
    active: true,
    createdBy: key.createdBy,
    createdAt: timestampFromDate(key.createdAt),
    updatedAt: timestampFromDate(key.updatedAt),
    lastUsed: timestampFromDate(key.lastUsed),
  };
}
