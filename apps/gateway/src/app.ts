import Koa from "koa";
import { Router } from "@koa/router";
import type { Logger } from "@loom/kit/logger";
import { authenticate } from "./auth.ts";
import type { ServiceClients } from "./clients.ts";
import { errorHandler } from "./errors.ts";
import { openApiDocument } from "./openapi.ts";
import { mountOperations, type Operation } from "./operation.ts";
import { requestId } from "./request-id.ts";
import { apiKeyOperations } from "./routes/api-keys.ts";
import { userOperations } from "./routes/users.ts";

export interface GatewayDeps {
  clients: ServiceClients;
  logger: Logger;
  /** Whether the services behind the gateway answer (for /readyz). */
  ready: () => Promise<boolean>;
}

export function publicOperations(clients: ServiceClients): Operation[] {
  return [...userOperations(clients), ...apiKeyOperations(clients)];
}

/** The gateway as a Koa app, built from its dependencies so tests can start the real thing. */
export function buildApp(deps: GatewayDeps): { app: Koa; router: Router; operations: Operation[] } {
  const operations = publicOperations(deps.clients);
  const openapi = openApiDocument(operations);
  const router = new Router();
  mountOperations(router, operations);

  const app = new Koa({ proxy: false });
  app.silent = true; // errorHandler logs; Koa's default would print stacks to stderr
  app.use(requestId);
  app.use(errorHandler(deps.logger));
  // The compat alias (semantics.md §1): /api/x is /x.
  app.use(async (ctx, next) => {
    if (ctx.path === "/api" || ctx.path.startsWith("/api/")) ctx.path = ctx.path.slice(4) || "/";
    await next();
  });
  // Unauthenticated: probes and the API description.
  app.use(async (ctx, next) => {
    if (ctx.method !== "GET") return next();
    if (ctx.path === "/healthz") return void (ctx.body = { status: "ok" });
    if (ctx.path === "/readyz") {
      const ok = await deps.ready().catch(() => false);
      ctx.status = ok ? 200 : 503;
      ctx.body = { status: ok ? "ready" : "not ready" };
      return;
    }
    if (ctx.path === "/openapi.json") return void (ctx.body = openapi);
    await next();
  });
  app.use(authenticate(deps.clients.identity));
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true }));
  return { app, router, operations };
}
