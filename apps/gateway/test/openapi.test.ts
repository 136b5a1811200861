import { describe, expect, it } from "vitest";
import { openApiDocument } from "../src/openapi.ts";
import { routerPath } from "../src/operation.ts";
import { undescribedFields } from "./field-descriptions.ts";
import { appWithoutServices } from "./no-services.ts";

const { router, operations } = appWithoutServices();
const document = openApiDocument(operations) as {
  openapi: string;
  paths: Record<string, Record<string, { operationId: string }>>;
};

describe("/openapi.json", () => {
  it("documents every mounted route, and documents nothing that is not mounted", () => {
    const mounted = router.stack.flatMap((layer) =>
      layer.methods.filter((m) => m !== "HEAD").map((method) => `${method} ${layer.path}`),
    );
    const restOfPath = (id: string) => operations.find((o) => o.id === id)?.restOfPath;
    const documented = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(
        ([method, o]) => `${method.toUpperCase()} ${routerPath(path, restOfPath(o.operationId))}`,
      ),
    );
    expect(mounted.length).toBeGreaterThan(0);
    expect([...mounted].sort()).toEqual([...documented].sort());
  });

  it("has the operations of docs/api.md, with their success codes", () => {
    const byId = Object.fromEntries(
      Object.values(document.paths).flatMap((methods) => Object.values(methods).map((op) => [op.operationId, op])),
    ) as unknown as Record<string, { responses: Record<string, unknown> }>;
    const expected = {
      ListUsers: "200",
      GetUser: "200",
      CreateCheckoutSession: "201",
      CreateBillingManagementUrl: "201",
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
      DecideAssistantRunApprovals: "200",
      CancelAssistantRun: "200",
      CreateThread: "201",
      ListThreads: "200",
      GetThread: "200",
      UpdateThread: "200",
      DeleteThread: "204",
      ListRulesets: "200",
      CreateRuleset: "201",
      GetRuleset: "200",
      UpdateRuleset: "200",
      DeleteRuleset: "204",
      ListRules: "200",
      CreateRule: "201",
      GetRule: "200",
      UpdateRule: "200",
      DeleteRule: "204",
      CreateMessage: "201",
      ListMessages: "200",
      GetMessage: "200",
      UpdateMessage: "200",
      DeleteMessage: "204",
      ListAssistantEvents: "200",
      CreateEvents: "202",
      ListEvents: "200",
      GetEvent: "200",
      GetAssistantRunEventsSSE: "200",
      GetStructureRunEventsSSE: "200",
      ListBuckets: "200",
      CreateBucket: "201",
      GetBucket: "200",
      UpdateBucket: "200",
      DeleteBucket: "204",
      ListAssets: "200",
      CreateAsset: "201",
      GetAsset: "200",
      DeleteAsset: "204",
      CreateAssetUrl: "200",
      CreateSpans: "200",
      ListSpans: "200",
      ListSecrets: "200",
      CreateSecret: "201",
      GetSecret: "200",
      UpdateSecret: "200",
      DeleteSecret: "204",
    };
    for (const [id, status] of Object.entries(expected))
      expect(Object.keys(byId[id]?.responses ?? {}), id).toContain(status);
    expect(document.openapi).toBe("3.1.0");
  });

  it("documents the name bounds of the request bodies", () => {
    const create = (document.paths["/users/{user_id}/api-keys"] as any).post.requestBody.content["application/json"]
      .schema;
    expect(create.properties.name).toMatchObject({ type: "string", minLength: 1, maxLength: 200 });
    expect(create.required).toEqual(["name"]);
  });

  it("marks a secret's value write-only in the request bodies, and no answer of the secrets operations has one", () => {
    for (const [path, method] of [
      ["/secrets", "post"],
      ["/secrets/{secret_id}", "patch"],
    ] as const) {
      const body = (document.paths as any)[path][method].requestBody.content["application/json"].schema;
      // An update's fields may also be null (unchanged): the string is then the first of anyOf.
      const value = body.properties?.value ?? body.anyOf[0].properties.value.anyOf[0];
      expect(value, `${method} ${path}`).toMatchObject({ type: "string", minLength: 1, writeOnly: true });
    }
    for (const methods of [(document.paths as any)["/secrets"], (document.paths as any)["/secrets/{secret_id}"]])
      for (const operation of Object.values(methods) as any[])
        for (const answer of Object.values(operation.responses) as any[])
          expect(JSON.stringify(answer.content?.["application/json"]?.schema ?? {})).not.toMatch(/"value"/);
  });

  const ops = Object.values(document.paths).flatMap((methods) => Object.values(methods)) as any[];
  const op = (path: string, method: string) => (document.paths as any)[path][method];
  const v4 = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$";

  it("gives every id in a path and in a body the v4 uuid pattern the server checks", () => {
    // Asset names and activity names are the path parameters that are not ids.
    const notIds = new Set(["name", "activity"]);
    const pathIds = ops.flatMap((o) => o.parameters.filter((p: any) => p.in === "path" && !notIds.has(p.name)));
    expect(pathIds.length).toBeGreaterThan(20);
    for (const p of pathIds) expect(p.schema, p.name).toMatchObject({ type: "string", pattern: v4 });
    const run = op("/assistants/{assistant_id}/runs", "post").requestBody.content["application/json"].schema.anyOf[0]; // the body is optional: [object, null]
    expect(run.properties.thread_id.anyOf[0]).toMatchObject({ pattern: v4 });
    expect(run.properties.tool_ids.anyOf[0]).toMatchObject({ type: "array", maxItems: 100, items: { pattern: v4 } });
  });

  it("documents paging bounds as integers, the status filter as an enum, and names without control characters", () => {
    const list = op("/assistants/{assistant_id}/runs", "get").parameters;
    const param = (name: string) => list.find((p: any) => p.name === name)?.schema;
    expect(param("page")).toEqual({ type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
    expect(param("page_size")).toEqual({ type: "integer", minimum: 1, maximum: 100 });
    expect(param("status")).toEqual({
      type: "array",
      minItems: 1,
      items: { type: "string", enum: ["QUEUED", "STARTING", "RUNNING", "SUCCEEDED", "FAILED", "ERROR", "CANCELLED"] },
    });
    const events = op("/assistant-runs/{assistant_run_id}/events", "get").parameters;
    expect(events.find((p: any) => p.name === "offset").schema).toMatchObject({ type: "integer", minimum: 0 });
    expect(events.find((p: any) => p.name === "limit").schema).toMatchObject({
      type: "integer",
      minimum: 1,
      maximum: 1000,
    });
    const name = op("/threads", "post").requestBody.content["application/json"].schema.properties.name;
    expect(new RegExp(name.pattern).test("ok name")).toBe(true);
    expect(new RegExp(name.pattern).test("nul\u0000")).toBe(false);
  });

  it("documents the three accepted forms of a CreateEvents body, and null where null is accepted", () => {
    const body = op("/structure-runs/{structure_run_id}/events", "post").requestBody.content["application/json"].schema;
    expect(body.anyOf.map((form: any) => form.type)).toEqual(["object", "array", "object"]);
    expect(body.anyOf[0].required).toEqual(["events"]);
    expect(body.anyOf[1]).toMatchObject({ minItems: 1, maxItems: 1000 });
    expect(body.anyOf[2].required).toEqual(["type", "timestamp"]);
    const update = op("/assistants/{assistant_id}", "patch").requestBody;
    expect(update.required).toBe(false);
    expect(update.content["application/json"].schema.anyOf.at(-1)).toEqual({ type: "null" }); // a whole body of null is no body
    const create = op("/assistants", "post").requestBody.content["application/json"].schema;
    expect(create.properties.description.anyOf).toContainEqual({ type: "null" });
    expect(create.properties.name.anyOf).toBeUndefined(); // required: null is not a name
  });

  it("documents asset names in paths and bodies with their bounds and rules, and include_contents as a boolean", () => {
    const names = [
      ...["/buckets/{bucket_id}/assets/{name}", "/buckets/{bucket_id}/asset-urls/{name}"].flatMap((path) =>
        Object.values(document.paths[path]!).map((o: any) => o.parameters.find((p: any) => p.name === "name").schema),
      ),
      op("/buckets/{bucket_id}/assets", "put").requestBody.content["application/json"].schema.properties.name,
    ];
    expect(names).toHaveLength(4);
    for (const name of names) {
      expect(name).toMatchObject({ type: "string", minLength: 1, maxLength: 256 });
      const pattern = new RegExp(name.pattern, "u");
      expect(["dir/file.txt", "a", ".hidden/x..y"].map((n) => pattern.test(n))).toEqual([true, true, true]);
      expect(["../x", "a/../b", "/a", "a\\b", "a\u0000"].map((n) => pattern.test(n))).toEqual([
        false,
        false,
        false,
        false,
        false,
      ]);
    }
    expect(
      op("/buckets/{bucket_id}/assets/{name}", "get").parameters.find((p: any) => p.name === "include_contents"),
    ).toMatchObject({ in: "query", required: false, schema: { type: "boolean" } });
    const url = op("/buckets/{bucket_id}/asset-urls/{name}", "post");
    expect(url.requestBody.required).toBe(false);
    expect(url.requestBody.content["application/json"].schema.anyOf[0].properties.operation.anyOf[0]).toMatchObject({
      enum: ["PUT", "GET"],
    });
    expect(url.responses["200"].content["application/json"].schema.required).toEqual(["url", "headers", "expires_at"]);
  });

  it("documents thread bodies as griptape sends them: any other key taken, at most 1,000 messages, metadata an object", () => {
    const update = op("/threads/{thread_id}", "patch").requestBody.content["application/json"].schema.anyOf[0];
    expect(update.additionalProperties).toEqual({}); // the conversation-memory driver's meta keys
    const messages = update.properties.messages.anyOf[0];
    expect(messages).toMatchObject({ type: "array", maxItems: 1000 });
    expect(messages.items).toMatchObject({ type: "object", required: ["input", "output"], additionalProperties: {} });
    expect(update.properties.metadata.anyOf[0]).toMatchObject({ type: "object" });
    const detail = op("/threads/{thread_id}", "get").responses["200"].content["application/json"].schema;
    expect(detail.required).toEqual(expect.arrayContaining(["metadata", "message_count", "messages_length", "alias"]));
    const list = op("/threads", "get").parameters.map((p: any) => p.name);
    expect(list).toEqual(["page", "page_size", "alias", "starts_with", "created_by"]);
  });

  it("lists on each operation only the errors it can give, each with the error body", () => {
    const statuses = (path: string, method: string) => Object.keys(op(path, method).responses);
    // Billing refuses only the paid operations: a run's create and the chat calls.
    const paid = ops.filter((o) => o.responses["402"]).map((o) => o.operationId);
    expect(paid.sort()).toEqual(["CreateAssistantRun", "CreateChatMessage", "CreateChatMessageStream"]);
    // No input, nothing to validate, no id to miss, no body to be too large.
    expect(statuses("/users", "get")).toEqual(["200", "401", "403", "409", "429", "500", "503"]);
    // A list with only paging: 400, but no 404.
    expect(statuses("/assistants", "get")).toEqual(["200", "400", "401", "403", "409", "429", "500", "503"]);
    // An id in the path: 404; a body: 413.
    expect(statuses("/assistants/{assistant_id}", "patch")).toEqual(
      expect.arrayContaining(["400", "404", "409", "413"]),
    );
    expect(statuses("/assistants/{assistant_id}", "get")).not.toContain("413");
    expect(statuses("/assistants/{assistant_id}", "delete")).not.toContain("413");
    // Ids named in the body (ruleset_ids, tool_ids) may be unknown too.
    expect(statuses("/assistants", "post")).toContain("404");
    for (const o of ops) {
      for (const status of ["401", "403", "409", "429", "500", "503"])
        expect(o.responses[status], `${o.operationId} ${status}`).toBeDefined();
      for (const [status, answer] of Object.entries(o.responses) as [string, any][]) {
        if (Number(status) < 400) continue;
        expect(answer.content["application/json"].schema, `${o.operationId} ${status}`).toEqual({
          $ref: "#/components/schemas/ErrorBody",
        });
      }
    }
  });

  it("groups the operations by resource, one tag each, every tag listed once in the document's order", () => {
    const tagOf = (path: string, method: string) => op(path, method).tags;
    expect(tagOf("/users/{user_id}/api-keys", "post")).toEqual(["API keys"]);
    expect(tagOf("/organizations/{organization_id}/api-keys", "get")).toEqual(["API keys"]);
    expect(tagOf("/assistants/{assistant_id}/runs", "post")).toEqual(["Assistant runs"]);
    expect(tagOf("/assistant-runs/{assistant_run_id}/cancel", "post")).toEqual(["Assistant runs"]);
    expect(tagOf("/assistant-runs/{assistant_run_id}/events/stream", "get")).toEqual(["Events"]);
    expect(tagOf("/buckets/{bucket_id}/asset-urls/{name}", "post")).toEqual(["Assets"]);
    expect(tagOf("/threads/{thread_id}/messages", "get")).toEqual(["Messages"]);
    expect(tagOf("/chat/messages", "post")).toEqual(["Chat"]);
    const used = new Set(ops.map((o) => o.tags[0]));
    for (const o of ops) expect(o.tags, o.operationId).toHaveLength(1);
    expect(used.has("default")).toBe(false);
    expect(used.size).toBeGreaterThan(15);
    const listed = (document as any).tags.map((t: { name: string }) => t.name);
    expect(new Set(listed).size).toBe(listed.length);
    for (const tag of used) expect(listed, tag).toContain(tag);
    expect(listed.slice(0, 4)).toEqual(["API keys", "Users", "Billing", "Assistants"]);
  });

  it("opens with a getting-started text: where the key comes from, and a curl call with it", () => {
    const text = (document as any).info.description as string;
    expect(text).toContain("bootstrap key");
    expect(text).toContain("pnpm loom keys create");
    expect(text).toMatch(/curl -H "Authorization: Bearer \$LOOM_API_KEY" http:\/\/localhost:8080\/assistants/);
  });

  it("describes every field: parameters, request bodies, answers, stream events and the error body", () => {
    const { missing, total } = undescribedFields(document);
    console.log(`/openapi.json: ${total - missing.length} of ${total} fields described`);
    // A new field comes with its description (`.meta({ description })` on the zod definition that validates it).
    expect(missing).toEqual([]);
    expect(total).toBeGreaterThan(900);
    // Described from the definitions: a shared field, a route-local body field, a query and a path parameter.
    expect(op("/assistants", "post").requestBody.content["application/json"].schema.properties.name.description).toBe(
      "The assistant's name",
    );
    const runs = op("/assistants/{assistant_id}/runs", "get").parameters;
    expect(runs.find((p: any) => p.name === "assistant_id").description).toBe("The assistant's id");
    expect(runs.find((p: any) => p.name === "page_size").description).toBe("How many items a page holds");
  });

  it("gives response ids the lower-case v4 pattern Loom produces", () => {
    const user = op("/users", "get").responses["200"].content["application/json"].schema.properties.users.items;
    for (const id of [user.properties.user_id, user.properties.organizations.items]) {
      expect(id.pattern).toBe("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
    }
  });

  it("describes each event of a stream: the offset as id, the event's JSON as data", () => {
    for (const [path, runField] of [
      ["/assistant-runs/{assistant_run_id}/events/stream", "assistant_run_id"],
      ["/structure-runs/{structure_run_id}/events/stream", "structure_run_id"],
    ] as const) {
      const event = op(path, "get").responses["200"].content["text/event-stream"].schema;
      expect(event.required).toEqual(["id", "data"]);
      expect(event.properties.data).toMatchObject({
        contentMediaType: "application/json",
        contentSchema: { required: expect.arrayContaining(["event_id", runField, "type"]) },
      });
    }
  });
});
