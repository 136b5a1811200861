import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { laterThan } from "@loom/testing/clock";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ruleListSchema, ruleSchema, rulesetListSchema, rulesetSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

const uuid = () => crypto.randomUUID();

/** The keys of griptape-cloud-client's RulesetDetail and RuleDetail, exactly. */
const rulesetKeys = [
  "alias",
  "created_at",
  "created_by",
  "description",
  "metadata",
  "name",
  "organization_id",
  "rule_ids",
  "ruleset_id",
  "updated_at",
];
const ruleKeys = ["created_at", "created_by", "metadata", "name", "organization_id", "rule", "rule_id", "updated_at"];

describe.each(storeKinds("rulesets over HTTP"))("rulesets and rules over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  let adminUserId: string;
  let orgId: string;

  beforeAll(async () => {
    stack = await startStack(store);
    ({ admin, stranger, adminUserId, orgId } = await organizationClients(stack, `ruleset-stranger-${store}`));
  });
  afterAll(() => stack?.close());

  const newRule = async (rule: unknown = "Be brief.", client = admin) =>
    (await client.post("/rules", { name: "r", rule })).body.rule_id as string;
  const newRuleset = async (body: Record<string, unknown> = {}, client = admin) =>
    (await client.post("/rulesets", { name: "s", ...body })).body.ruleset_id as string;
  const count = async (path: "/rulesets" | "/rules" | "/assistants", client = admin) =>
    (await client.get(path)).body.pagination.total_count as number;

  describe("CreateRule and the rule's shape", () => {
    it("creates a string rule: 201, exactly RuleDetail's keys, metadata {} by default", async () => {
      const res = await admin.post("/rules", { name: "Brevity", rule: "Answer in one sentence." });
      expect(res.status).toBe(201);
      const rule = ruleSchema.parse(res.body);
      expect(Object.keys(res.body).sort()).toEqual(ruleKeys);
      expect(rule).toMatchObject({
        name: "Brevity",
        rule: "Answer in one sentence.",
        metadata: {},
        organization_id: orgId,
        created_by: adminUserId,
      });
      expect(rule.created_at).toBe(rule.updated_at);
      expect((await admin.get(`/rules/${rule.rule_id}`)).body).toEqual(res.body);
    });

    it("a JSON-object rule (a JSON schema) and metadata round-trip exactly as given", async () => {
      const schema = {
        type: "object",
        properties: { answer: { type: "string" }, $ref: { "a.b": [1, 2.5, null, true] } },
        required: ["answer"],
      };
      const metadata = { $set: "x", "a.b": { "": [] } };
      const res = await admin.post("/rules", { name: "Shape", rule: schema, metadata });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ rule: schema, metadata });
      expect((await admin.get(`/rules/${res.body.rule_id}`)).body).toEqual(res.body);
    });

    it.each([
      ["an empty string", ""],
      ["a string over 10,000 characters", "x".repeat(10_001)],
      ["a number", 7],
      ["an array", ["a"]],
      ["a boolean", true],
    ])("refuses %s as the rule, writing nothing", async (_what, rule) => {
      const before = await count("/rules");
      const body = expectError(await admin.post("/rules", { name: "r", rule }), 400, "ValidationError");
      expect(body.errors.map((e) => e.path)).toEqual(["body.rule"]);
      expect(await count("/rules")).toBe(before);
    });

    it("a rule of exactly 10,000 characters is accepted; a missing rule or name is refused", async () => {
      expect((await admin.post("/rules", { name: "r", rule: "x".repeat(10_000) })).status).toBe(201);
      const body = expectError(await admin.post("/rules", { rule: null }), 400, "ValidationError");
      expect(body.errors.map((e) => e.path).sort()).toEqual(["body.name", "body.rule"]);
    });

    it.each([
      [0, false],
      [1, true],
      [200, true],
      [201, false],
    ])("name of %i characters: ok=%s", async (length, ok) => {
      const res = await admin.post("/rules", { name: "x".repeat(length), rule: "r" });
      if (ok) expect(res.status).toBe(201);
      else expect(expectError(res, 400, "ValidationError").errors[0]?.path).toBe("body.name");
    });
  });

  describe("Get, Update, Delete a rule", () => {
    it("updates only the given fields: a string rule may become a JSON schema", async () => {
      const id = await newRule("Before.");
      const before = (await admin.get(`/rules/${id}`)).body;
      await laterThan(before.updated_at);
      const res = await admin.patch(`/rules/${id}`, { rule: { type: "object" }, metadata: { k: 1 } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ name: "r", rule: { type: "object" }, metadata: { k: 1 } });
      expect(Date.parse(res.body.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
      expect((await admin.patch(`/rules/${id}`)).body).toEqual(res.body);
      expectError(await admin.patch(`/rules/${id}`, { name: "ok", rule: "" }), 400, "ValidationError");
      expect((await admin.get(`/rules/${id}`)).body).toEqual(res.body);
    });

    it("deletes: 204, then 404", async () => {
      const id = await newRule();
      const res = await admin.delete(`/rules/${id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectError(await admin.get(`/rules/${id}`), 404, "NotFound");
      expectError(await admin.delete(`/rules/${id}`), 404, "NotFound");
      expectError(await admin.patch(`/rules/${id}`, { name: "x" }), 404, "NotFound");
    });

    it("deleting a rule removes it from every ruleset that lists it, keeping the others' order", async () => {
      const [a, doomed, b] = [await newRule("A."), await newRule("Doomed."), await newRule("B.")];
      const first = await newRuleset({ rule_ids: [a, doomed, b] });
      const second = await newRuleset({ rule_ids: [doomed] });
      expect((await admin.delete(`/rules/${doomed}`)).status).toBe(204);
      expect((await admin.get(`/rulesets/${first}`)).body.rule_ids).toEqual([a, b]);
      expect((await admin.get(`/rulesets/${second}`)).body.rule_ids).toEqual([]);
      expect((await admin.get(`/rules?ruleset_id=${first}`)).body.rules.map((r: { rule: string }) => r.rule)).toEqual([
        "A.",
        "B.",
      ]);
    });

    it("404 for an unknown id, 400 for a malformed one", async () => {
      expectError(await admin.get(`/rules/${uuid()}`), 404, "NotFound");
      expect(expectError(await admin.get("/rules/123"), 400, "ValidationError").errors[0]?.path).toBe("path.rule_id");
    });
  });

  describe("CreateRuleset and the ruleset's shape", () => {
    it("creates with only a name: 201, exactly RulesetDetail's keys, alias null, description '', metadata {}, no rules", async () => {
      const res = await admin.post("/rulesets", { name: "Plain" });
      expect(res.status).toBe(201);
      const ruleset = rulesetSchema.parse(res.body);
      expect(Object.keys(res.body).sort()).toEqual(rulesetKeys);
      expect(ruleset).toMatchObject({
        name: "Plain",
        alias: null,
        description: "",
        metadata: {},
        rule_ids: [],
        organization_id: orgId,
        created_by: adminUserId,
      });
      expect(ruleset.created_at).toBe(ruleset.updated_at);
    });

    it("creates with every field, keeping the order of rule_ids; upper-case ids stored in lower case", async () => {
      const [a, b, c] = [await newRule(), await newRule(), await newRule()];
      const res = await admin.post("/rulesets", {
        name: "House style",
        alias: "house-style",
        description: "How we answer",
        metadata: { team: "docs" },
        rule_ids: [c, a.toUpperCase(), b],
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        alias: "house-style",
        description: "How we answer",
        metadata: { team: "docs" },
        rule_ids: [c, a, b],
      });
      expect((await admin.get(`/rulesets/${res.body.ruleset_id}`)).body).toEqual(res.body);
    });

    for (const [field, max] of [
      ["name", 200],
      ["description", 200],
    ] as const) {
      it.each([
        [0, false],
        [1, true],
        [max, true],
        [max + 1, false],
      ])(`${field} of %i characters: ok=%s`, async (length, ok) => {
        const before = await count("/rulesets");
        const res = await admin.post("/rulesets", { name: "n", [field]: "x".repeat(length) });
        if (ok) expect(res.status).toBe(201);
        else {
          expect(expectError(res, 400, "ValidationError").errors).toEqual([
            { path: `body.${field}`, message: expect.any(String) },
          ]);
          expect(await count("/rulesets")).toBe(before);
        }
      });
    }

    it("refuses rule ids of no rule, of another organization's rule, repeated or malformed, naming each; writes nothing", async () => {
      const before = await count("/rulesets");
      const [mine, unknown, theirs] = [await newRule(), uuid(), await newRule("Theirs.", stranger)];
      const body = expectError(
        await admin.post("/rulesets", { name: "bad", rule_ids: [mine, unknown, theirs, mine] }),
        400,
        "ValidationError",
      );
      expect(body.errors).toEqual([
        { path: "body.rule_ids[3]", message: expect.stringContaining(mine) },
        { path: "body.rule_ids[1]", message: expect.stringContaining(unknown) },
        { path: "body.rule_ids[2]", message: expect.stringContaining(theirs) },
      ]);
      expect(
        expectError(await admin.post("/rulesets", { name: "bad", rule_ids: ["nope"] }), 400, "ValidationError")
          .errors[0]?.path,
      ).toBe("body.rule_ids[0]");
      expect(
        expectError(await admin.post("/rulesets", { name: "bad", metadata: [1] }), 400, "ValidationError").errors[0]
          ?.path,
      ).toBe("body.metadata");
      expect(await count("/rulesets")).toBe(before);
    });
  });

  describe("Get, Update, Delete a ruleset", () => {
    it("updates only the given fields; rule_ids replaces the list; an empty body changes nothing", async () => {
      const [a, b] = [await newRule(), await newRule()];
      const id = await newRuleset({ alias: "before", description: "d", metadata: { k: "v" }, rule_ids: [a] });
      const before = (await admin.get(`/rulesets/${id}`)).body;
      await laterThan(before.updated_at);
      const res = await admin.patch(`/rulesets/${id}`, { alias: "after", rule_ids: [b, a], description: null });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: "s",
        alias: "after",
        description: "d",
        metadata: { k: "v" },
        rule_ids: [b, a],
      });
      expect(Date.parse(res.body.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
      expect((await admin.get(`/rulesets/${id}`)).body).toEqual(res.body);
      expect((await admin.patch(`/rulesets/${id}`)).body).toEqual(res.body);
      expect((await admin.patch(`/rulesets/${id}`, {})).body).toEqual(res.body);
      expect((await admin.patch(`/rulesets/${id}`, { rule_ids: [], metadata: {} })).body).toMatchObject({
        rule_ids: [],
        metadata: {},
      });
    });

    it("a rejected update changes nothing", async () => {
      const id = await newRuleset({ rule_ids: [await newRule()] });
      const before = (await admin.get(`/rulesets/${id}`)).body;
      const unknown = uuid();
      const body = expectError(
        await admin.patch(`/rulesets/${id}`, { name: "renamed", rule_ids: [unknown] }),
        400,
        "ValidationError",
      );
      expect(body.errors).toEqual([{ path: "body.rule_ids[0]", message: expect.stringContaining(unknown) }]);
      expectError(await admin.patch(`/rulesets/${id}`, { name: "" }), 400, "ValidationError");
      expect((await admin.get(`/rulesets/${id}`)).body).toEqual(before);
    });

    it("deletes: 204, then 404; its rules are kept", async () => {
      const rule = await newRule();
      const id = await newRuleset({ rule_ids: [rule] });
      const res = await admin.delete(`/rulesets/${id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectError(await admin.get(`/rulesets/${id}`), 404, "NotFound");
      expectError(await admin.delete(`/rulesets/${id}`), 404, "NotFound");
      expect((await admin.get(`/rules/${rule}`)).status).toBe(200);
    });

    it("409 for a ruleset an assistant names, naming the assistant; deletable once detached", async () => {
      const id = await newRuleset();
      const assistant = (await admin.post("/assistants", { name: "a", ruleset_ids: [id] })).body.assistant_id;
      const body = expectError(await admin.delete(`/rulesets/${id}`), 409, "Conflict");
      expect(body.errors[0]?.message).toContain(assistant);
      expect((await admin.get(`/rulesets/${id}`)).status).toBe(200);
      await admin.patch(`/assistants/${assistant}`, { ruleset_ids: [] });
      expect((await admin.delete(`/rulesets/${id}`)).status).toBe(204);
    });

    it("404 for an unknown id, 400 for a malformed one", async () => {
      expectError(await admin.get(`/rulesets/${uuid()}`), 404, "NotFound");
      expectError(await admin.patch(`/rulesets/${uuid()}`, { name: "x" }), 404, "NotFound");
      expectError(await admin.delete(`/rulesets/${uuid()}`), 404, "NotFound");
      expect(expectError(await admin.get("/rulesets/123"), 400, "ValidationError").errors[0]?.path).toBe(
        "path.ruleset_id",
      );
    });
  });

  describe("another organization", () => {
    it("sees neither rulesets nor rules: 404 like an unknown id, and they stay untouched", async () => {
      const rule = await newRule("Private.");
      const id = await newRuleset({ rule_ids: [rule] });
      for (const res of [
        await stranger.get(`/rulesets/${id}`),
        await stranger.patch(`/rulesets/${id}`, { name: "mine now" }),
        await stranger.delete(`/rulesets/${id}`),
        await stranger.get(`/rules?ruleset_id=${id}`),
        await stranger.get(`/rules/${rule}`),
        await stranger.patch(`/rules/${rule}`, { rule: "mine now" }),
        await stranger.delete(`/rules/${rule}`),
      ])
        expectError(res, 404, "NotFound");
      expect((await admin.get(`/rulesets/${id}`)).body).toMatchObject({ name: "s", rule_ids: [rule] });
      expect((await admin.get(`/rules/${rule}`)).body.rule).toBe("Private.");
      const theirs = await stranger.get("/rulesets");
      expect(theirs.body.rulesets.map((r: { ruleset_id: string }) => r.ruleset_id)).not.toContain(id);
    });
  });

  describe("ListRulesets and ListRules", () => {
    let lister: ApiClient;
    const made: string[] = [];
    const rules: string[] = [];
    beforeAll(async () => {
      lister = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `ruleset-lister-${store}` }));
      for (let i = 0; i < 3; i++) rules.push(await newRule(`Rule ${i}.`, lister));
      for (let i = 0; i < 3; i++) made.push(await newRuleset({ alias: i < 2 ? "shared" : "alone" }, lister));
    });

    it("pages rulesets newest first with next and previous pages", async () => {
      const first = await lister.get("/rulesets?page_size=2");
      expect(rulesetListSchema.parse(first.body).pagination).toEqual({
        page_number: 1,
        page_size: 2,
        total_count: 3,
        total_pages: 2,
        next_page: 2,
      });
      const second = await lister.get("/rulesets?page=2&page_size=2");
      expect(second.body.pagination).toMatchObject({ page_number: 2, previous_page: 1 });
      expect(
        [...first.body.rulesets, ...second.body.rulesets].map((r: { ruleset_id: string }) => r.ruleset_id),
      ).toEqual([...made].reverse());
    });

    it("filters by alias; an alias nothing has is a 200 with an empty list", async () => {
      const shared = await lister.get("/rulesets?alias=shared");
      expect(shared.status).toBe(200);
      expect(shared.body.rulesets.map((r: { ruleset_id: string }) => r.ruleset_id)).toEqual([made[1], made[0]]);
      const none = await lister.get("/api/rulesets?alias=nothing-has-this");
      expect(none.status).toBe(200);
      expect(rulesetListSchema.parse(none.body)).toEqual({
        rulesets: [],
        pagination: { page_number: 1, page_size: 20, total_count: 0, total_pages: 0 },
      });
    });

    it("lists rules newest first", async () => {
      const res = await lister.get("/rules");
      expect(ruleListSchema.parse(res.body).rules.map((r) => r.rule_id)).toEqual([...rules].reverse());
      expect(res.body.pagination.total_count).toBe(3);
    });

    it("lists a ruleset's rules in its rule_ids order, paged; 404 for an unknown ruleset, 400 for a malformed id", async () => {
      const id = await newRuleset({ rule_ids: [rules[1], rules[2], rules[0]] }, lister);
      const all = await lister.get(`/rules?ruleset_id=${id}`);
      expect(all.status).toBe(200);
      expect(ruleListSchema.parse(all.body).rules.map((r) => r.rule_id)).toEqual([rules[1], rules[2], rules[0]]);
      const second = await lister.get(`/rules?ruleset_id=${id}&page=2&page_size=2`);
      expect(second.body.rules.map((r: { rule_id: string }) => r.rule_id)).toEqual([rules[0]]);
      expect(second.body.pagination).toMatchObject({ total_count: 3, total_pages: 2, previous_page: 1 });
      expectError(await lister.get(`/rules?ruleset_id=${uuid()}`), 404, "NotFound");
      expect(expectError(await lister.get("/rules?ruleset_id=x"), 400, "ValidationError").errors[0]?.path).toBe(
        "query.ruleset_id",
      );
    });

    it("without page_size, a ruleset's rules come whole in one page (griptape's ruleset driver reads one page)", async () => {
      const many: string[] = [];
      for (let i = 0; i < 25; i++) many.push(await newRule(`Many ${i}.`, lister));
      const id = await newRuleset({ rule_ids: many }, lister);
      const res = await lister.get(`/rules?ruleset_id=${id}`);
      expect(res.body.rules.map((r: { rule_id: string }) => r.rule_id)).toEqual(many);
      expect(res.body.pagination).toMatchObject({ page_size: 100, total_count: 25, total_pages: 1 });
    });

    it.each(["page_size=0", "page_size=101", "page=0", "page=x"])("400 for %s", async (query) => {
      expectError(await lister.get(`/rulesets?${query}`), 400, "ValidationError");
      expectError(await lister.get(`/rules?${query}`), 400, "ValidationError");
    });
  });

  describe("assistants name rulesets that exist", () => {
    it("CreateAssistant refuses a ruleset id of no ruleset (or another organization's), naming it; nothing stored", async () => {
      const before = await count("/assistants");
      const [mine, unknown, theirs] = [await newRuleset(), uuid(), await newRuleset({}, stranger)];
      const body = expectError(
        await admin.post("/assistants", { name: "a", ruleset_ids: [mine, unknown, theirs] }),
        400,
        "ValidationError",
      );
      expect(body.errors).toEqual([
        { path: "body.ruleset_ids[1]", message: expect.stringContaining(unknown) },
        { path: "body.ruleset_ids[2]", message: expect.stringContaining(theirs) },
      ]);
      expect(await count("/assistants")).toBe(before);
      expect((await admin.post("/assistants", { name: "a", ruleset_ids: [mine] })).body.ruleset_ids).toEqual([mine]);
    });

    it("UpdateAssistant refuses one too, changing nothing; the other ids are kept and echoed", async () => {
      const mine = await newRuleset();
      const toolId = (await admin.post("/tools", { name: "T" })).body.tool_id as string;
      const created = (await admin.post("/assistants", { name: "a", ruleset_ids: [mine], tool_ids: [toolId] })).body;
      expect(created.tool_ids).toEqual([toolId]);
      const unknown = uuid();
      const body = expectError(
        await admin.patch(`/assistants/${created.assistant_id}`, { name: "renamed", ruleset_ids: [unknown] }),
        400,
        "ValidationError",
      );
      expect(body.errors).toEqual([{ path: "body.ruleset_ids[0]", message: expect.stringContaining(unknown) }]);
      expect((await admin.get(`/assistants/${created.assistant_id}`)).body).toEqual(created);
    });
  });
});
