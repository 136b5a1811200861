import { Code, ConnectError } from "@connectrpc/connect";
import { Router } from "@koa/router";
import type { ServeBlob } from "@loom/blob-plane/exchange";
import type { Bus } from "@loom/bus/bus";
import { subjects } from "@loom/contracts/subjects";
import type { Logger } from "@loom/telemetry/logger";
import Koa from "koa";
import { apiDocs } from "./api-docs.ts";
import { authenticate } from "./auth.ts";
import { billingStanding } from "./billing-standing.ts";
import { forwardBlobs } from "./blob-forwarding.ts";
import type { ServiceClients } from "./clients.ts";
import { defaultLimits, type LimitSettings } from "./config.ts";
import { consoleApp } from "./console.ts";
import { errorHandler } from "./errors.ts";
import { createEventFeeds, type EventFeeds } from "./event-feeds.ts";
import { createKnownRuns } from "./known-runs.ts";
import { methodNotAllowed } from "./method-not-allowed.ts";
import { observeRequests } from "./metrics.ts";
import { openStreams } from "./open-streams.ts";
import { openApiDocument } from "./openapi.ts";
import { mountOperations, type Operation } from "./operation.ts";
import { createPrincipalCache } from "./principal-cache.ts";
import { rateLimit } from "./rate-limit.ts";
import type { Readiness } from "./readiness.ts";
import { requestId } from "./request-id.ts";
import { createRevocations, type Revocations } from "./revocations.ts";
import { apiKeyOperations } from "./routes/api-keys.ts";
import { assetOperations } from "./routes/assets.ts";
import { assistantOperations } from "./routes/assistants.ts";
import { billingOperations } from "./routes/billing.ts";
import { bucketOperations } from "./routes/buckets.ts";
import { chatOperations } from "./routes/chat.ts";
import { dataConnectorOperations } from "./routes/data-connectors.ts";
import { assistantEventOperations } from "./routes/events.ts";
import { knowledgeBaseJobOperations } from "./routes/knowledge-base-jobs.ts";
import { knowledgeBaseQueryOperations } from "./routes/knowledge-base-queries.ts";
import { knowledgeBaseOperations } from "./routes/knowledge-bases.ts";
import { messageOperations } from "./routes/messages.ts";
import { ruleOperations } from "./routes/rules.ts";
import { rulesetOperations } from "./routes/rulesets.ts";
import { runOperations } from "./routes/runs.ts";
import { secretOperations } from "./routes/secrets.ts";
import { streamOperations } from "./routes/streams.ts";
import { structureEventOperations } from "./routes/structure-events.ts";
import { structureSpanOperations } from "./routes/structure-spans.ts";
import { threadOperations } from "./routes/threads.ts";
import { toolActivityOperations } from "./routes/tool-activities.ts";
import { toolOperations } from "./routes/tools.ts";
import { userOperations } from "./routes/users.ts";
import { stripeWebhook } from "./stripe-webhook.ts";
import { traceRequests } from "./trace-requests.ts";

export interface GatewayDeps {
  clients: ServiceClients;
  /**
   * The blob data plane (signed URLs, `/blobs/<token>`): the storage service's
   * ServeBlob in process, or `remoteBlobs` to it over HTTP.
   */
  blobs: ServeBlob;
  logger: Logger;
  /** What /readyz says (see readiness.ts). */
  readiness: () => Promise<Readiness>;
  /**
   * Where identity announces revoked keys. With it, the gateway caches
   * Authenticate answers; without it, it asks identity on every request.
   */
  bus?: Bus;
  /** Per-credential and per-organization limits; unset: the defaults (config.ts). */
  limits?: LimitSettings;
  /**
   * Whether billing is required (`BILLING_REQUIRED`, the setting identity
   * reads): only then is identity asked before a run or a chat call
   * (`billingStanding`). Unset: asked (identity decides).
   */
  billingRequired?: boolean;
  /** Origins the console's page may call besides Loom's own: where signed blob URLs point (S3 with public URLs). */
  consoleConnectOrigins?: readonly string[];
}

export function publicOperations(clients: ServiceClients, feeds: EventFeeds, revocations?: Revocations): Operation[] {
  const knownRuns = createKnownRuns();
  return [
    ...userOperations(clients),
    ...apiKeyOperations(clients, revocations),
    ...assistantOperations(clients),
    ...runOperations(clients, knownRuns),
    ...threadOperations(clients),
    ...rulesetOperations(clients),
    ...ruleOperations(clients),
    ...messageOperations(clients),
    ...assistantEventOperations(clients),
    ...structureEventOperations(clients),
    ...structureSpanOperations(clients),
    ...streamOperations(clients, feeds, knownRuns),
    ...bucketOperations(clients),
    ...assetOperations(clients),
    ...chatOperations(clients),
    ...billingOperations(clients),
    ...toolOperations(clients),
    ...secretOperations(clients),
    ...toolActivityOperations(clients),
    ...knowledgeBaseOperations(clients),
    ...knowledgeBaseJobOperations(clients),
    ...knowledgeBaseQueryOperations(clients),
    ...dataConnectorOperations(clients),
  ];
}

/** The gateway as a Koa app, built from its dependencies so tests can start the real thing. */
export function buildApp(deps: GatewayDeps): { app: Koa; router: Router; operations: Operation[]; feeds: EventFeeds } {
  // Deleted keys, heard from the bus and from this replica's own DELETEs: they drop cached answers and end open streams.
  const revocations = createRevocations();
  const bus = deps.bus;
  // Cached only while the bus can bring revocations; what was cached before an outage is dropped when it ends (revocations sent meanwhile were lost).
  const principals = bus ? createPrincipalCache({ trusted: () => bus.connection() !== "disconnected" }) : undefined;
  if (bus && principals) {
    revocations.onRevoke((apiKeyId) => principals.revokeApiKey(apiKeyId));
    bus.onReconnect(() => principals.clear());
  }
  deps.bus?.subscribe(subjects.revokedApiKeys, (data) => revocations.revoke(new TextDecoder().decode(data)));
  const feeds = createEventFeeds(deps.clients.events, deps.logger);
  const operations = publicOperations(deps.clients, feeds, revocations);
  // Built when first asked for: a process nobody reads it from does not hold it (the all-in-one's memory at rest).
  let openapi: ReturnType<typeof openApiDocument> | undefined;
  const limits = deps.limits ?? defaultLimits;
  const router = new Router();
  mountOperations(router, operations, {
    beforeStream: openStreams({
      perCredential: limits.STREAMS_PER_CREDENTIAL,
      perOrganization: limits.STREAMS_PER_ORGANIZATION,
      revocations,
    }),
    billingStanding: billingStanding(deps.clients.billing, deps.billingRequired ?? true),
  });

  const app = new Koa({ proxy: false });
  app.silent = true; // errorHandler logs; Koa's default would print stacks to stderr
  app.use(traceRequests());
  app.use(observeRequests(router));
  app.use(requestId);
  app.use(errorHandler(deps.logger));
  // The compat alias (docs/behaviour.md §1): /api/x is /x.
  app.use(async (ctx, next) => {
    if (ctx.path === "/api" || ctx.path.startsWith("/api/")) ctx.path = ctx.path.slice(4) || "/";
    await next();
  });
  // Unauthenticated, and no JSON body: signed blob URLs carry their own credential and any number of bytes.
  app.use(forwardBlobs(deps.blobs, deps.logger));
  // Unauthenticated, raw bytes: Stripe's signature is the credential (identity verifies it).
  app.use(stripeWebhook(deps.clients.billing));
  // Unauthenticated: probes and the API description.
  app.use(async (ctx, next) => {
    if (ctx.method !== "GET") return next();
    if (ctx.path === "/healthz") {
      ctx.state.operationId = "healthz";
      return void (ctx.body = { status: "ok" });
    }
    if (ctx.path === "/readyz") {
      ctx.state.operationId = "readyz";
      const readiness = await deps.readiness().catch((): Readiness => ({ ready: false }));
      if (!readiness.ready) throw new ConnectError("not ready: its stores do not answer", Code.Unavailable);
      ctx.body = {
        status: "ready",
        ...(readiness.services ? { services: readiness.services } : {}),
        ...(readiness.bus ? { bus: readiness.bus } : {}),
      };
      return;
    }
    if (ctx.path === "/openapi.json") {
      ctx.state.operationId = "openapi";
      openapi ??= openApiDocument(operations);
      return void (ctx.body = openapi);
    }
    await next();
  });
  // Unauthenticated: the console (its page asks for a key); `/` leads there.
  app.use(consoleApp(deps.consoleConnectOrigins));
  // Unauthenticated: the API reference page that renders /openapi.json.
  app.use(apiDocs());
  app.use(authenticate(deps.clients.identity, principals, revocations));
  if (limits.RATE_LIMIT_REQUESTS || limits.RATE_LIMIT_ORGANIZATION_REQUESTS) {
    app.use(
      rateLimit({
        perCredential: limits.RATE_LIMIT_REQUESTS,
        perOrganization: limits.RATE_LIMIT_ORGANIZATION_REQUESTS,
        windowSeconds: limits.RATE_LIMIT_WINDOW_SECONDS,
      }),
    );
  }
  app.use(methodNotAllowed);
  app.use(router.routes());
  return { app, router, operations, feeds };
}
