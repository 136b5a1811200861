import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { laterThan } from "@loom/testing/clock";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolListSchema, toolSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

const uuid = () => crypto.randomUUID();

/** The keys griptape-cloud-client 0.2.0's ToolDetail.from_dict pops without a default: one missing fails its parse. */
const clientRequiredKeys = [
  "code",
  "created_at",
  "created_by",
  "description",
  "env_vars",
  "latest_deployment_id",
  "name",
  "organization_id",
  "tool_id",
  "updated_at",
];

const server = {
  url: "https://tools.example.com/mcp",
  transport: "mcp",
  headers: { "X-Team": { value: "blue" } } as Record<string, { value: string } | { secret_ref: string }>,
};

describe.each(storeKinds("tools over HTTP"))("tools over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  let adminUserId: string;
  let orgId: string;
  /** Secrets of the admin's organization, and the server naming one in a header. */
  let secretIds: string[];
  let withSecret: typeof server;

  beforeAll(async () => {
    stack = await startStack(store);
    ({ admin, stranger, adminUserId, orgId } = await organizationClients(stack, `tool-stranger-${store}`));
    secretIds = [];
    for (const name of ["API_KEY", "TOKEN"])
      secretIds.push((await admin.post("/secrets", { name, value: `value of ${name}` })).body.secret_id);
    withSecret = { ...server, headers: { ...server.headers, Authorization: { secret_ref: secretIds[0]! } } };
  });
  afterAll(() => stack?.close());

  const countTools = async () => (await admin.get("/tools")).body.pagination.total_count as number;

  describe("CreateTool", () => {
    it("creates with every field, answering 201 in ToolDetail's shape plus the server", async () => {
      const body = {
        name: "Calculator",
        description: "Adds numbers",
        code: { github: { owner: "o", name: "repo", push: { branch: "main", tag: "v1" } } },
        env_vars: [
          { name: "MODE", value: "fast", source: "manual" },
          { name: "TOKEN", value: secretIds[1]!, source: "secret_ref" },
        ],
        tool_config_file: "tool.yaml",
        server: withSecret,
      };
      const res = await admin.post("/tools", body);
      expect(res.status).toBe(201);
      const t = toolSchema.parse(res.body);
      expect(t).toMatchObject({ ...body, organization_id: orgId, created_by: adminUserId, latest_deployment_id: null });
      expect(t.created_at).toBe(t.updated_at);
      expect(Object.keys(res.body)).toEqual(expect.arrayContaining(clientRequiredKeys));
    });

    it("creates from what the generated client sends (a name only): the default code, no server, every required key", async () => {
      const res = await admin.post("/api/tools", { name: "Minimal" });
      expect(res.status).toBe(201);
      const t = toolSchema.parse(res.body);
      expect(t).toMatchObject({ code: { default: {} }, description: "", env_vars: [], latest_deployment_id: null });
      expect(t).not.toHaveProperty("server");
      expect(t).not.toHaveProperty("tool_config_file");
      expect(Object.keys(res.body)).toEqual(expect.arrayContaining(clientRequiredKeys));
    });

    it("keeps each code kind the clients know, and a server without headers", async () => {
      const code = { data_lake: { bucket_id: uuid(), asset_path: "tools/x" } };
      const res = await admin.post("/tools", {
        name: "Lake",
        code,
        server: { url: "http://127.0.0.1:8000/", transport: "griptape" },
      });
      expect(res.status).toBe(201);
      expect(toolSchema.parse(res.body)).toMatchObject({
        code,
        server: { url: "http://127.0.0.1:8000/", transport: "griptape", headers: {} },
      });
    });

    it("keeps which activities need approval: true, a list of names, or none for false and an empty list", async () => {
      const created = async (approval_required: unknown) =>
        toolSchema.parse(
          (await admin.post("/tools", { name: "Guarded", server: { ...server, approval_required } })).body,
        );
      expect((await created(true)).server?.approval_required).toBe(true);
      expect((await created(["delete_file", "send_mail"])).server?.approval_required).toEqual([
        "delete_file",
        "send_mail",
      ]);
      expect((await created(false)).server).not.toHaveProperty("approval_required");
      expect((await created([])).server).not.toHaveProperty("approval_required");
      const tool = await created(["delete_file"]);
      const replaced = await admin.patch(`/tools/${tool.tool_id}`, { server: { ...server, approval_required: true } });
      expect(replaced.status).toBe(200);
      expect((await admin.get(`/tools/${tool.tool_id}`)).body.server.approval_required).toBe(true);
    });

    it.each([
      ["body.server.approval_required", { server: { ...server, approval_required: "all" } }],
      ["body.server.approval_required[1]", { server: { ...server, approval_required: ["add", "bad name"] } }],
      ["body.server.approval_required[1]", { server: { ...server, approval_required: ["add", "add"] } }],
      ["body.server.url", { server: { ...server, url: "ftp://tools.example.com/" } }],
      ["body.server.url", { server: { ...server, url: "/relative/mcp" } }],
      ["body.server.url", { server: { ...server, url: "https://user:pw@tools.example.com/" } }],
      ["body.server.url", { server: { ...server, url: `https://tools.example.com/${"x".repeat(2048)}` } }],
      ["body.server.transport", { server: { ...server, transport: "stdio" } }],
      ["body.server.transport", { server: { url: "https://tools.example.com/" } }],
      ["body.server.headers.Bad Name", { server: { ...server, headers: { "Bad Name": { value: "v" } } } }],
      ["body.server.headers.X-A.value", { server: { ...server, headers: { "X-A": { value: "v\r\nX-B: injected" } } } }],
      [
        "body.server.headers.X-A.secret_ref",
        { server: { ...server, headers: { "X-A": { secret_ref: "not-a-uuid" } } } },
      ],
      ["body.server.headers.X-A", { server: { ...server, headers: { "X-A": {} } } }],
      ["body.code", { code: {} }],
      ["body.env_vars[0].source", { code: null, env_vars: [{ name: "A", value: "1", source: "vault" }] }],
      ["body.env_vars[0].name", { env_vars: [{ name: "", value: "1" }] }],
      ["body.description", { description: "x".repeat(201) }],
      ["body.tool_config_file", { tool_config_file: "" }],
      ["body.env_vars", { env_vars: Array.from({ length: 101 }, (_, i) => ({ name: `V${i}`, value: "" })) }],
      [
        "body.server.headers",
        {
          server: {
            ...server,
            headers: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`X-H${i}`, { value: "v" }])),
          },
        },
      ],
    ])("400 naming %s (case %#), and nothing is written", async (path, fields) => {
      const before = await countTools();
      const body = expectError(await admin.post("/tools", { name: "Bad", ...fields }), 400, "ValidationError");
      expect(body.errors.map((e) => e.path)).toContain(path);
      expect(await countTools()).toBe(before);
    });
  });

  describe("secret references", () => {
    it("a header and an env var may name the organization's secrets, by id in any case", async () => {
      const res = await admin.post("/tools", {
        name: "Refs",
        env_vars: [{ name: "TOKEN", value: secretIds[1]!.toUpperCase(), source: "secret_ref" }],
        server: { ...server, headers: { "X-Api-Key": { secret_ref: secretIds[0]!.toUpperCase() } } },
      });
      expect(res.status).toBe(201);
      expect(res.body.env_vars).toEqual([{ name: "TOKEN", value: secretIds[1], source: "secret_ref" }]);
      expect(res.body.server.headers).toEqual({ "X-Api-Key": { secret_ref: secretIds[0] } });
    });

    it("400 naming each field that names no secret of the organization (an unknown one, another's), and nothing is written", async () => {
      const strangers = (await stranger.post("/secrets", { name: "theirs", value: "not yours" })).body.secret_id;
      const before = await countTools();
      const body = expectError(
        await admin.post("/tools", {
          name: "Bad refs",
          env_vars: [
            { name: "OK", value: secretIds[1]!, source: "secret_ref" },
            { name: "UNKNOWN", value: uuid(), source: "secret_ref" },
            { name: "MALFORMED", value: "API_KEY", source: "secret_ref" },
            { name: "PLAIN", value: "not an id, and not a reference", source: "manual" },
          ],
          server: { ...server, headers: { "X-Api-Key": { secret_ref: strangers } } },
        }),
        400,
        "ValidationError",
      );
      expect(body.errors.map((e) => e.path).sort()).toEqual(
        ["body.env_vars[1].value", "body.env_vars[2].value", "body.server.headers.X-Api-Key.secret_ref"].sort(),
      );
      expect(await countTools()).toBe(before);
    });

    it("an update naming an unknown secret is refused and changes nothing; a secret deleted later stays named", async () => {
      const doomed = (await admin.post("/secrets", { name: "doomed", value: "v" })).body.secret_id;
      const tool = (
        await admin.post("/tools", {
          name: "Later",
          env_vars: [{ name: "D", value: doomed, source: "secret_ref" }],
        })
      ).body;
      const refused = await admin.patch(`/tools/${tool.tool_id}`, {
        env_vars: [
          { name: "X", value: "1" },
          { name: "D", value: uuid(), source: "secret_ref" },
        ],
      });
      expect(expectError(refused, 400, "ValidationError").errors.map((e) => e.path)).toEqual([
        "body.env_vars[1].value",
      ]);
      expect((await admin.get(`/tools/${tool.tool_id}`)).body).toEqual(tool);
      expect((await admin.delete(`/secrets/${doomed}`)).status).toBe(204);
      expect((await admin.get(`/tools/${tool.tool_id}`)).body.env_vars).toEqual(tool.env_vars);
      expect((await admin.patch(`/tools/${tool.tool_id}`, { name: "Renamed" })).status).toBe(200);
    });
  });

  describe("Get, Update, Delete", () => {
    let toolId: string;
    beforeAll(async () => {
      toolId = (
        await admin.post("/tools", { name: "Editable", description: "d", tool_config_file: "f", server: withSecret })
      ).body.tool_id;
    });

    it("gets one tool", async () => {
      const res = await admin.get(`/tools/${toolId}`);
      expect(res.status).toBe(200);
      expect(toolSchema.parse(res.body)).toMatchObject({ name: "Editable", server: withSecret });
    });

    it("updates only the fields sent; a server sent replaces the stored one", async () => {
      const before = (await admin.get(`/tools/${toolId}`)).body;
      await laterThan(before.updated_at);
      const newServer = { url: "https://other.example.com/", transport: "griptape", headers: {} };
      const res = await admin.patch(`/tools/${toolId}`, {
        name: "Edited",
        env_vars: [{ name: "A", value: "1" }],
        server: newServer,
        description: null,
      });
      expect(res.status).toBe(200);
      expect(toolSchema.parse(res.body)).toMatchObject({
        name: "Edited",
        description: "d",
        tool_config_file: "f",
        code: { default: {} },
        env_vars: [{ name: "A", value: "1" }],
        server: newServer,
      });
      expect(Date.parse(res.body.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
      expect((await admin.get(`/tools/${toolId}`)).body).toEqual(res.body);
    });

    it("an empty or absent update body changes nothing", async () => {
      const before = (await admin.get(`/tools/${toolId}`)).body;
      expect((await admin.patch(`/tools/${toolId}`)).body).toEqual(before);
      expect((await admin.patch(`/tools/${toolId}`, {})).body).toEqual(before);
    });

    it("a rejected update changes nothing", async () => {
      const before = (await admin.get(`/tools/${toolId}`)).body;
      const res = await admin.patch(`/tools/${toolId}`, {
        name: "ok",
        server: { url: "file:///etc/passwd", transport: "mcp" },
      });
      expect(expectError(res, 400, "ValidationError").errors.map((e) => e.path)).toEqual(["body.server.url"]);
      expect((await admin.get(`/tools/${toolId}`)).body).toEqual(before);
    });

    it("404 for another organization's tool, which stays untouched", async () => {
      expectError(await stranger.get(`/tools/${toolId}`), 404, "NotFound");
      expectError(await stranger.patch(`/tools/${toolId}`, { name: "mine now" }), 404, "NotFound");
      expectError(await stranger.delete(`/tools/${toolId}`), 404, "NotFound");
      expect((await admin.get(`/tools/${toolId}`)).body.name).toBe("Edited");
      expect((await stranger.get("/tools")).body.tools).toEqual([]);
    });

    it("404 for an unknown id, 400 for a malformed one", async () => {
      expectError(await admin.get(`/tools/${uuid()}`), 404, "NotFound");
      expectError(await admin.patch(`/tools/${uuid()}`, { name: "x" }), 404, "NotFound");
      expectError(await admin.delete(`/tools/${uuid()}`), 404, "NotFound");
      expect(expectError(await admin.get("/tools/123"), 400, "ValidationError").errors[0]?.path).toBe("path.tool_id");
    });

    it("deletes with 204 and no body; the tool is gone", async () => {
      const id = (await admin.post("/tools", { name: "Doomed" })).body.tool_id;
      const res = await admin.delete(`/tools/${id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectError(await admin.get(`/tools/${id}`), 404, "NotFound");
      expectError(await admin.delete(`/tools/${id}`), 404, "NotFound");
    });
  });

  describe("ListTools", () => {
    let lister: ApiClient;
    const made: string[] = [];
    beforeAll(async () => {
      lister = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `tool-lister-${store}` }));
      for (let i = 0; i < 3; i++) made.push((await lister.post("/tools", { name: `t${i}` })).body.tool_id);
    });

    it("pages newest first", async () => {
      const first = await lister.get("/tools?page_size=2");
      expect(toolListSchema.parse(first.body).pagination).toEqual({
        page_number: 1,
        page_size: 2,
        total_count: 3,
        total_pages: 2,
        next_page: 2,
      });
      const second = await lister.get("/api/tools?page=2&page_size=2");
      expect(second.body.pagination).toMatchObject({ page_number: 2, previous_page: 1 });
      expect([...first.body.tools, ...second.body.tools].map((t: { tool_id: string }) => t.tool_id)).toEqual(
        [...made].reverse(),
      );
      for (const t of first.body.tools) expect(Object.keys(t)).toEqual(expect.arrayContaining(clientRequiredKeys));
    });

    it.each(["page_size=0", "page_size=101", "page=0", "page=x"])("400 for %s", async (query) => {
      expectError(await lister.get(`/tools?${query}`), 400, "ValidationError");
    });
  });
});
