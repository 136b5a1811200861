import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { laterThan } from "@loom/testing/clock";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assistantListSchema, assistantSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

const uuid = () => crypto.randomUUID();

describe.each(storeKinds("assistants over HTTP"))("assistants over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  let adminUserId: string;
  let orgId: string;

  beforeAll(async () => {
    stack = await startStack(store);
    ({ admin, stranger, adminUserId, orgId } = await organizationClients(stack, `assistant-stranger-${store}`));
  });
  afterAll(() => stack?.close());

  /** A tool of the organization: an assistant's tool_ids must name tools that exist. */
  const newTool = async (client = admin) => (await client.post("/tools", { name: "T" })).body.tool_id as string;
  const countAssistants = async (client = admin) =>
    (await client.get("/assistants")).body.pagination.total_count as number;

  describe("CreateAssistant", () => {
    it("creates with every field, answering 201 in the public shape", async () => {
      const ruleset = async () => (await admin.post("/rulesets", { name: "r" })).body.ruleset_id as string;
      const knowledgeBase = (await admin.post("/knowledge-bases", { name: "k" })).body.knowledge_base_id as string;
      const ids = {
        knowledge_base_ids: [knowledgeBase],
        retriever_ids: [uuid()],
        ruleset_ids: [await ruleset(), await ruleset()],
        structure_ids: [],
        tool_ids: [await newTool()],
      };
      const res = await admin.post("/assistants", {
        name: "Helper",
        description: "Helps",
        input: "Say {{ args[0] }}",
        ...ids,
      });
      expect(res.status).toBe(201);
      const a = assistantSchema.parse(res.body);
      expect(a).toMatchObject({
        name: "Helper",
        description: "Helps",
        input: "Say {{ args[0] }}",
        organization_id: orgId,
        created_by: adminUserId,
        ...ids,
      });
      expect(a.created_at).toBe(a.updated_at);
    });

    it("creates with only a name: empty arrays, empty description, no input", async () => {
      const res = await admin.post("/api/assistants", { name: "Minimal", input: null, tool_ids: null });
      expect(res.status).toBe(201);
      const a = assistantSchema.parse(res.body);
      expect(a).toMatchObject({
        description: "",
        knowledge_base_ids: [],
        retriever_ids: [],
        ruleset_ids: [],
        structure_ids: [],
        tool_ids: [],
      });
      expect(a).not.toHaveProperty("input");
    });

    it("stores upper-case uuids in lower case", async () => {
      const id = await newTool();
      const res = await admin.post("/assistants", { name: "Case", tool_ids: [id.toUpperCase()] });
      expect(res.body.tool_ids).toEqual([id]);
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
        const before = await countAssistants();
        const body = { name: "n", [field]: "x".repeat(length) };
        const res = await admin.post("/assistants", body);
        if (ok) expect(res.status).toBe(201);
        else {
          expect(expectError(res, 400, "ValidationError").errors).toEqual([
            { path: `body.${field}`, message: expect.any(String) },
          ]);
          expect(await countAssistants()).toBe(before);
        }
      });
    }

    it("rejects wrong types and bad ids, naming every problem, and writes nothing", async () => {
      const before = await countAssistants();
      const body = expectError(
        await admin.post("/assistants", { name: 7, input: ["x"], tool_ids: ["not-a-uuid"], ruleset_ids: "nope" }),
        400,
        "ValidationError",
      );
      expect(body.errors.map((e) => e.path).sort()).toEqual([
        "body.input",
        "body.name",
        "body.ruleset_ids",
        "body.tool_ids[0]",
      ]);
      expectError(await admin.post("/assistants", "{bad json"), 400, "ValidationError");
      expectError(await admin.post("/assistants"), 400, "ValidationError");
      expectError(
        await admin.post("/assistants", { name: "x", tool_ids: Array.from({ length: 101 }, uuid) }),
        400,
        "ValidationError",
      );
      expect(await countAssistants()).toBe(before);
    });
  });

  describe("Get, Update, Delete", () => {
    let assistantId: string;
    beforeAll(async () => {
      assistantId = (
        await admin.post("/assistants", {
          name: "Editable",
          description: "d",
          input: "in",
          tool_ids: [await newTool()],
          retriever_ids: [uuid()],
        })
      ).body.assistant_id;
    });

    it("gets one assistant", async () => {
      const res = await admin.get(`/assistants/${assistantId}`);
      expect(res.status).toBe(200);
      expect(assistantSchema.parse(res.body).name).toBe("Editable");
    });

    it("updates only the fields sent; an empty list replaces; retriever_ids is ignored", async () => {
      const before = (await admin.get(`/assistants/${assistantId}`)).body;
      await laterThan(before.updated_at);
      const res = await admin.patch(`/assistants/${assistantId}`, {
        name: "Edited",
        tool_ids: [],
        retriever_ids: [uuid()],
        description: null,
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: "Edited",
        description: "d",
        input: "in",
        tool_ids: [],
        retriever_ids: before.retriever_ids,
      });
      expect(Date.parse(res.body.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
      expect((await admin.get(`/assistants/${assistantId}`)).body).toEqual(res.body);
    });

    it("an empty or absent update body changes nothing", async () => {
      const before = (await admin.get(`/assistants/${assistantId}`)).body;
      expect((await admin.patch(`/assistants/${assistantId}`)).body).toEqual(before);
      expect((await admin.patch(`/assistants/${assistantId}`, {})).body).toEqual(before);
    });

    it("a rejected update changes nothing", async () => {
      const before = (await admin.get(`/assistants/${assistantId}`)).body;
      expectError(
        await admin.patch(`/assistants/${assistantId}`, { name: "", tool_ids: [uuid()] }),
        400,
        "ValidationError",
      );
      expectError(
        await admin.patch(`/assistants/${assistantId}`, { name: "ok", description: "x".repeat(201) }),
        400,
        "ValidationError",
      );
      expect((await admin.get(`/assistants/${assistantId}`)).body).toEqual(before);
    });

    it("404 for another organization's assistant, which stays untouched", async () => {
      expectError(await stranger.get(`/assistants/${assistantId}`), 404, "NotFound");
      expectError(await stranger.patch(`/assistants/${assistantId}`, { name: "mine now" }), 404, "NotFound");
      expectError(await stranger.delete(`/assistants/${assistantId}`), 404, "NotFound");
      expect((await admin.get(`/assistants/${assistantId}`)).body.name).toBe("Edited");
      expect((await stranger.get("/assistants")).body.assistants).toEqual([]);
    });

    it("404 for an unknown id, 400 for a malformed one", async () => {
      expectError(await admin.get(`/assistants/${uuid()}`), 404, "NotFound");
      expectError(await admin.patch(`/assistants/${uuid()}`, { name: "x" }), 404, "NotFound");
      expect(expectError(await admin.get("/assistants/123"), 400, "ValidationError").errors[0]?.path).toBe(
        "path.assistant_id",
      );
    });

    it("deletes: 204, then 404", async () => {
      const id = (await admin.post("/assistants", { name: "Doomed" })).body.assistant_id;
      const res = await admin.delete(`/assistants/${id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectError(await admin.get(`/assistants/${id}`), 404, "NotFound");
      expectError(await admin.delete(`/assistants/${id}`), 404, "NotFound");
    });
  });

  describe("ListAssistants", () => {
    let lister: ApiClient;
    const made: string[] = [];
    beforeAll(async () => {
      lister = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `lister-${store}` }));
      for (let i = 0; i < 3; i++) made.push((await lister.post("/assistants", { name: `a${i}` })).body.assistant_id);
    });

    it("pages newest first with next and previous pages", async () => {
      const first = await lister.get("/assistants?page_size=2");
      expect(assistantListSchema.parse(first.body).pagination).toEqual({
        page_number: 1,
        page_size: 2,
        total_count: 3,
        total_pages: 2,
        next_page: 2,
      });
      const second = await lister.get("/assistants?page=2&page_size=2");
      expect(second.body.pagination).toEqual({
        page_number: 2,
        page_size: 2,
        total_count: 3,
        total_pages: 2,
        previous_page: 1,
      });
      expect(
        [...first.body.assistants, ...second.body.assistants].map((a: { assistant_id: string }) => a.assistant_id),
      ).toEqual([...made].reverse());
      expect((await lister.get("/assistants?page=3&page_size=2")).body.assistants).toEqual([]);
    });

    it.each(["page_size=0", "page_size=101", "page=0", "page=x", "page=1.5", "page=2.", "page_size=1e2"])(
      "400 for %s",
      async (query) => {
        expectError(await lister.get(`/assistants?${query}`), 400, "ValidationError");
      },
    );

    it("reads a page number written with a zero fraction, as the generated client sends a float (2.0)", async () => {
      const whole = await lister.get("/assistants?page=2&page_size=2");
      const fractional = await lister.get("/assistants?page=2.0&page_size=2.00");
      expect(fractional.status).toBe(200);
      expect(fractional.body).toEqual(whole.body);
    });
  });
});
