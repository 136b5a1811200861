import { describe, expect, it } from "vitest";
import { createRouterTransport } from "@connectrpc/connect";
import { createLogger } from "@loom/kit/logger";
import { buildApp } from "../src/app.ts";
import { oneTransport, serviceClients } from "../src/clients.ts";
import { openApiDocument } from "../src/openapi.ts";
import { routerPath } from "../src/operation.ts";

const { router, operations } = buildApp({
  clients: serviceClients(oneTransport(createRouterTransport(() => {}))),
  logger: createLogger("test", "silent"),
  ready: async () => true,
});
const document = openApiDocument(operations) as { openapi: string; paths: Record<string, Record<string, { operationId: string }>> };

describe("/openapi.json", () => {
  it("documents every mounted route, and documents nothing that is not mounted", () => {
    const mounted = router.stack.flatMap((layer) =>
      layer.methods.filter((m) => m !== "HEAD").map((method) => `${method} ${layer.path}`),
    );
    const documented = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${routerPath(path)}`),
    );
    expect(mounted.length).toBeGreaterThan(0);
    expect([...mounted].sort()).toEqual([...documented].sort());
  });

  it("has the operations of public-api.md built so far, with their success codes", () => {
    const byId = Object.fromEntries(
      Object.values(document.paths).flatMap((methods) => Object.values(methods).map((op) => [op.operationId, op])),
    ) as unknown as Record<string, { responses: Record<string, unknown> }>;
    const expected = {
      ListUsers: "200",
      GetApiKey: "200",
      UpdateApiKey: "200",
      DeleteApiKey: "204",
      ListOrganizationApiKeys: "200",
      CreateOrganizationApiKey: "201",
      ListApiKeys: "200",
      CreateApiKey: "201",
      ListAssistants: "200",
      CreateAssistant: "201",
      GetAssistant: "200",
      UpdateAssistant: "200",
      DeleteAssistant: "204",
      ListAssistantRuns: "200",
      CreateAssistantRun: "201",
      GetAssistantRun: "200",
      CancelAssistantRun: "200",
      CreateThread: "201",
      ListThreads: "200",
      GetThread: "200",
      DeleteThread: "204",
      ListAssistantEvents: "200",
      CreateEvents: "202",
      ListEvents: "200",
      GetEvent: "200",
      GetAssistantRunEventsSSE: "200",
      GetStructureRunEventsSSE: "200",
    };
    for (const [id, status] of Object.entries(expected)) expect(Object.keys(byId[id]?.responses ?? {}), id).toContain(status);
    expect(document.openapi).toBe("3.1.0");
  });

  it("documents the name bounds of the request bodies", () => {
    const create = (document.paths["/users/{user_id}/api-keys"] as any).post.requestBody.content["application/json"].schema;
    expect(create.properties.name).toMatchObject({ type: "string", minLength: 1, maxLength: 200 });
    expect(create.required).toEqual(["name"]);
  });
});
