import { maxMessagesPerBody } from "@loom/contracts/thread-messages";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { laterThan } from "@loom/testing/clock";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { messageListSchema, messageSchema, threadListSchema, threadSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

const uuid = () => crypto.randomUUID();

/** The keys griptape-cloud-client 0.2.0's ThreadDetail and MessageDetail read, every one required. */
const threadKeys = [
  "alias",
  "created_at",
  "created_by",
  "message_count",
  "messages_length",
  "metadata",
  "name",
  "organization_id",
  "thread_id",
  "updated_at",
];
const messageKeys = [
  "created_at",
  "created_by",
  "index",
  "input",
  "message_id",
  "metadata",
  "output",
  "thread_id",
  "updated_at",
];
const keysOf = (value: object) => Object.keys(value).sort();

/** A message as griptape's conversation-memory driver writes one: artifact JSON in `input` and `output`. */
const turn = (n: number, meta: Record<string, unknown> = {}) => ({
  input: JSON.stringify({ type: "TextArtifact", value: `question ${n}` }),
  output: JSON.stringify({ type: "TextArtifact", value: `answer ${n}` }),
  ...meta,
});
const lengthOf = (messages: Array<{ input: string; output: string }>) =>
  messages.reduce((sum, m) => sum + [...m.input].length + [...m.output].length, 0);

describe.each(storeKinds("threads and messages over HTTP"))("threads and messages over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  let adminUserId: string;
  let orgId: string;

  beforeAll(async () => {
    stack = await startStack(store);
    ({ admin, stranger, adminUserId, orgId } = await organizationClients(stack, `thread-stranger-${store}`));
  });
  afterAll(() => stack?.close());

  const countThreads = async () => (await admin.get("/threads")).body.pagination.total_count as number;
  const thread = async (body: Record<string, unknown> = {}) => {
    const res = await admin.post("/threads", { name: "t", ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return threadSchema.parse(res.body);
  };
  const messagesOf = async (threadId: string, query = "") => {
    const res = await admin.get(`/threads/${threadId}/messages${query}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return messageListSchema.parse(res.body);
  };

  describe("CreateThread", () => {
    it("creates with metadata and first messages: 201, ThreadDetail's keys exactly, messages in order", async () => {
      const messages = [turn(0), turn(1, { metadata: { run_id: "r1" } })];
      const res = await admin.post("/threads", {
        name: "Conversation",
        alias: `alias-${uuid()}`,
        metadata: { topic: "weather", nested: { list: [1, "two", null] } },
        messages,
      });
      expect(res.status).toBe(201);
      expect(keysOf(res.body)).toEqual(threadKeys);
      const t = threadSchema.parse(res.body);
      expect(t).toMatchObject({
        name: "Conversation",
        organization_id: orgId,
        created_by: adminUserId,
        metadata: { topic: "weather", nested: { list: [1, "two", null] } },
        message_count: 2,
        messages_length: lengthOf(messages),
      });
      expect(t.created_at).toBe(t.updated_at);

      const listed = await messagesOf(t.thread_id);
      for (const m of listed.messages) expect(keysOf(m)).toEqual(messageKeys);
      expect(listed.messages.map((m) => [m.index, m.input, m.output, m.metadata])).toEqual([
        [0, messages[0]!.input, messages[0]!.output, {}],
        [1, messages[1]!.input, messages[1]!.output, { run_id: "r1" }],
      ]);
      expect(listed.messages.every((m) => m.thread_id === t.thread_id && m.created_by === adminUserId)).toBe(true);
    });

    it("creates with only a name: alias null, metadata an empty object, no messages", async () => {
      const res = await admin.post("/api/threads", { name: "Bare", alias: null, metadata: null });
      expect(res.status).toBe(201);
      expect(keysOf(res.body)).toEqual(threadKeys);
      expect(threadSchema.parse(res.body)).toMatchObject({
        alias: null,
        metadata: {},
        message_count: 0,
        messages_length: 0,
      });
      expect((await messagesOf(res.body.thread_id)).messages).toEqual([]);
    });

    it.each([
      [0, false],
      [1, true],
      [200, true],
      [201, false],
    ])("a name of %i characters: ok=%s", async (length, ok) => {
      const before = await countThreads();
      const res = await admin.post("/threads", { name: "😀".repeat(length) });
      if (ok) expect(threadSchema.parse(res.body).name).toBe("😀".repeat(length));
      else {
        expect(expectError(res, 400, "ValidationError").errors).toEqual([
          { path: "body.name", message: expect.any(String) },
        ]);
        expect(await countThreads()).toBe(before);
      }
    });

    it("refuses metadata that is not an object and malformed messages, naming each path, and writes nothing", async () => {
      const before = await countThreads();
      const body = expectError(
        await admin.post("/threads", {
          name: "x",
          metadata: ["not", "an", "object"],
          messages: [turn(0), { input: 1, output: "b" }, { input: "c" }, "text"],
        }),
        400,
        "ValidationError",
      );
      expect(body.errors.map((e) => e.path).sort()).toEqual([
        "body.messages[1].input",
        "body.messages[2].output",
        "body.messages[3]",
        "body.metadata",
      ]);
      for (const metadata of ["text", 7, true]) {
        expect(
          expectError(await admin.post("/threads", { name: "x", metadata }), 400, "ValidationError").errors,
        ).toEqual([{ path: "body.metadata", message: "must be a JSON object" }]);
      }
      expectError(
        await admin.post("/threads", { name: "x", messages: { input: "a", output: "b" } }),
        400,
        "ValidationError",
      );
      expectError(await admin.post("/threads"), 400, "ValidationError");
      const tooMany = Array.from({ length: maxMessagesPerBody + 1 }, (_, n) => ({ input: `${n}`, output: "" }));
      expect(
        expectError(await admin.post("/threads", { name: "x", messages: tooMany }), 400, "ValidationError").errors,
      ).toEqual([{ path: "body.messages", message: `must have at most ${maxMessagesPerBody} items` }]);
      expect(await countThreads()).toBe(before);
    });
  });

  describe("GetThread and DeleteThread", () => {
    it("gets one thread as it was created", async () => {
      const t = await thread({ metadata: { a: 1 }, messages: [turn(0)] });
      const res = await admin.get(`/threads/${t.thread_id}`);
      expect(res.status).toBe(200);
      expect(keysOf(res.body)).toEqual(threadKeys);
      expect(res.body).toEqual(t);
    });

    it("404 for an unknown id, 400 for a malformed one", async () => {
      expectError(await admin.get(`/threads/${uuid()}`), 404, "NotFound");
      expectError(await admin.patch(`/threads/${uuid()}`, { name: "x" }), 404, "NotFound");
      expectError(await admin.delete(`/threads/${uuid()}`), 404, "NotFound");
      expectError(await admin.get(`/threads/${uuid()}/messages`), 404, "NotFound");
      expectError(await admin.post(`/threads/${uuid()}/messages`, turn(0)), 404, "NotFound");
      expect(expectError(await admin.get("/threads/123"), 400, "ValidationError").errors[0]?.path).toBe(
        "path.thread_id",
      );
    });

    it("deletes a thread with its messages: 204, then 404 for the thread and each message", async () => {
      const t = await thread({ messages: [turn(0), turn(1)] });
      const ids = (await messagesOf(t.thread_id)).messages.map((m) => m.message_id);
      const res = await admin.delete(`/threads/${t.thread_id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectError(await admin.get(`/threads/${t.thread_id}`), 404, "NotFound");
      expectError(await admin.get(`/threads/${t.thread_id}/messages`), 404, "NotFound");
      for (const id of ids) expectError(await admin.get(`/messages/${id}`), 404, "NotFound");
      expectError(await admin.delete(`/threads/${t.thread_id}`), 404, "NotFound");
    });
  });

  describe("another organization", () => {
    it("gets 404 for every operation on a thread and its messages, which stay untouched", async () => {
      const t = await thread({ name: "private", metadata: { secret: true }, messages: [turn(0)] });
      const [m] = (await messagesOf(t.thread_id)).messages;
      const path = `/threads/${t.thread_id}`;
      expectError(await stranger.get(path), 404, "NotFound");
      expectError(await stranger.patch(path, { name: "mine now", messages: [] }), 404, "NotFound");
      expectError(await stranger.delete(path), 404, "NotFound");
      expectError(await stranger.get(`${path}/messages`), 404, "NotFound");
      expectError(await stranger.post(`${path}/messages`, turn(1)), 404, "NotFound");
      expectError(await stranger.get(`/messages/${m!.message_id}`), 404, "NotFound");
      expectError(await stranger.patch(`/messages/${m!.message_id}`, { output: "mine" }), 404, "NotFound");
      expectError(await stranger.delete(`/messages/${m!.message_id}`), 404, "NotFound");
      expect((await admin.get(path)).body).toEqual(t);
      expect((await messagesOf(t.thread_id)).messages).toEqual([m]);
      expect((await stranger.get("/threads?starts_with=private")).body.threads).toEqual([]);
    });
  });

  describe("UpdateThread", () => {
    it("changes only the fields sent and moves updated_at", async () => {
      const t = await thread({ name: "before", alias: `a-${uuid()}`, metadata: { keep: 1 }, messages: [turn(0)] });
      await laterThan(t.updated_at);
      const res = await admin.patch(`/threads/${t.thread_id}`, { name: "after" });
      expect(res.status).toBe(200);
      expect(keysOf(res.body)).toEqual(threadKeys);
      const { updated_at, ...rest } = threadSchema.parse(res.body);
      expect(rest).toEqual({ ...t, name: "after", updated_at: undefined });
      expect(Date.parse(updated_at)).toBeGreaterThan(Date.parse(t.updated_at));
      expect((await admin.get(`/threads/${t.thread_id}`)).body).toEqual(res.body);
      expect((await messagesOf(t.thread_id)).messages).toHaveLength(1);
    });

    it("an empty or absent body changes nothing but updated_at", async () => {
      const t = await thread({ metadata: { a: 1 }, messages: [turn(0)] });
      const { updated_at: _, ...before } = t;
      for (const body of [undefined, {}]) {
        const res = await admin.patch(`/threads/${t.thread_id}`, body);
        expect(res.status).toBe(200);
        expect({ ...res.body, updated_at: undefined }).toEqual({ ...before, updated_at: undefined });
      }
    });

    it("`messages` replaces the thread's messages: the old are gone, the new in order, indexes 0..n-1", async () => {
      const t = await thread({ messages: [turn(0), turn(1), turn(2)] });
      const old = (await messagesOf(t.thread_id)).messages.map((m) => m.message_id);
      const replacement = [turn(10), turn(11, { metadata: { run_id: "b" } })];
      const res = await admin.patch(`/threads/${t.thread_id}`, { messages: replacement });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ message_count: 2, messages_length: lengthOf(replacement) });
      const now = (await messagesOf(t.thread_id)).messages;
      expect(now.map((m) => [m.index, m.input, m.output, m.metadata])).toEqual([
        [0, replacement[0]!.input, replacement[0]!.output, {}],
        [1, replacement[1]!.input, replacement[1]!.output, { run_id: "b" }],
      ]);
      expect(now.some((m) => old.includes(m.message_id))).toBe(false);
      for (const id of old) expectError(await admin.get(`/messages/${id}`), 404, "NotFound");

      const emptied = await admin.patch(`/threads/${t.thread_id}`, { messages: [] });
      expect(emptied.body).toMatchObject({ message_count: 0, messages_length: 0 });
      expect((await messagesOf(t.thread_id)).messages).toEqual([]);
    });

    it("stores metadata keys of any text, dots and dollars included", async () => {
      const metadata = { "a.b": 1, $set: { "x.y": [{ $in: "z" }] }, "": "empty", "ünï 🧵": null };
      const t = await thread({ metadata, messages: [{ input: "i", output: "o", metadata }] });
      expect(t.metadata).toEqual(metadata);
      expect((await admin.get(`/threads/${t.thread_id}`)).body.metadata).toEqual(metadata);
      expect((await messagesOf(t.thread_id)).messages[0]!.metadata).toEqual(metadata);
      const patched = await admin.patch(`/threads/${t.thread_id}`, { "$meta.key": "v", messages: [] });
      expect(patched.body.metadata).toEqual({ "$meta.key": "v" });
    });

    it("`metadata` replaces the thread's metadata; left out, it stays", async () => {
      const t = await thread({ metadata: { old: true } });
      expect((await admin.patch(`/threads/${t.thread_id}`, { metadata: { new: 1 } })).body.metadata).toEqual({
        new: 1,
      });
      expect((await admin.patch(`/threads/${t.thread_id}`, { name: "renamed" })).body.metadata).toEqual({ new: 1 });
      expect((await admin.patch(`/threads/${t.thread_id}`, { metadata: {} })).body.metadata).toEqual({});
    });

    it("takes griptape's conversation-memory body: unknown keys go to metadata, a message's to its metadata", async () => {
      const t = await thread({ alias: `memory-${uuid()}` });
      // GriptapeCloudConversationMemoryDriver.store: dict_merge({"messages": [...]}, memory.meta), and each
      // message dict_merge({input, output, metadata: {run_id}}, run.meta).
      const res = await admin.patch(`/threads/${t.thread_id}`, {
        messages: [turn(0, { metadata: { run_id: "run-0" }, mood: "curious", shared: "from run" })],
        metadata: { explicit: 1, shared: "explicit" },
        shared: "from memory",
        memory: { window: [1, 2] },
      });
      expect(res.status).toBe(200);
      expect(res.body.metadata).toEqual({ explicit: 1, shared: "from memory", memory: { window: [1, 2] } });
      expect((await admin.get(`/threads/${t.thread_id}`)).body.metadata).toEqual(res.body.metadata);
      const [m] = (await messagesOf(t.thread_id)).messages;
      expect(m!.metadata).toEqual({ run_id: "run-0", mood: "curious", shared: "from run" });
      expect(keysOf(m!)).toEqual(messageKeys);

      // Unknown keys alone (no `metadata` key) replace the metadata too, as the driver sends a memory's whole meta.
      const again = await admin.patch(`/threads/${t.thread_id}`, { messages: [turn(1)], only: "this" });
      expect(again.body.metadata).toEqual({ only: "this" });
    });

    it("checks the known fields and changes nothing when refused", async () => {
      const t = await thread({ name: "kept", metadata: { kept: true }, messages: [turn(0)] });
      const before = (await admin.get(`/threads/${t.thread_id}`)).body;
      const messagesBefore = (await messagesOf(t.thread_id)).messages;
      const body = expectError(
        await admin.patch(`/threads/${t.thread_id}`, {
          name: "",
          metadata: "nope",
          messages: [turn(1), turn(2), turn(3), { input: "x", output: 5 }],
          extra: "fine",
        }),
        400,
        "ValidationError",
      );
      expect(body.errors.map((e) => e.path).sort()).toEqual(["body.messages[3].output", "body.metadata", "body.name"]);
      expectError(await admin.patch(`/threads/${t.thread_id}`, { name: "x".repeat(201) }), 400, "ValidationError");
      expectError(await admin.patch(`/threads/${t.thread_id}`, { messages: "all" }), 400, "ValidationError");
      expectError(await admin.patch(`/threads/${t.thread_id}`, [turn(0)]), 400, "ValidationError");
      expect((await admin.get(`/threads/${t.thread_id}`)).body).toEqual(before);
      expect((await messagesOf(t.thread_id)).messages).toEqual(messagesBefore);
      expect((await admin.patch(`/threads/${t.thread_id}`, { name: "x".repeat(200) })).status).toBe(200);
    });
  });

  describe("ListThreads", () => {
    let lister: ApiClient;
    let listerId: string;
    const made: Record<string, string> = {};
    beforeAll(async () => {
      lister = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `thread-lister-${store}` }));
      listerId = (await lister.get("/users")).body.users[0].user_id;
      for (const [name, alias] of [
        ["alpha one", "first"],
        ["alpha two", "second"],
        ["a.b literal", undefined],
        ["axb", undefined],
        ["beta", "first"],
      ] as const) {
        const res = await lister.post("/threads", { name, alias });
        expect(res.status).toBe(201);
        made[name] = res.body.thread_id;
      }
    });
    const names = async (query: string) => {
      const res = await lister.get(`/threads${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const list = threadListSchema.parse(res.body);
      for (const t of res.body.threads) expect(keysOf(t)).toEqual(threadKeys);
      return list.threads.map((t) => t.name);
    };

    it("pages newest first with next and previous pages", async () => {
      const first = threadListSchema.parse((await lister.get("/threads?page_size=3")).body);
      expect(first.pagination).toEqual({ page_number: 1, page_size: 3, total_count: 5, total_pages: 2, next_page: 2 });
      const second = threadListSchema.parse((await lister.get("/threads?page=2&page_size=3")).body);
      expect(second.pagination).toEqual({
        page_number: 2,
        page_size: 3,
        total_count: 5,
        total_pages: 2,
        previous_page: 1,
      });
      expect([...first.threads, ...second.threads].map((t) => t.name)).toEqual([
        "beta",
        "axb",
        "a.b literal",
        "alpha two",
        "alpha one",
      ]);
    });

    it("filters by alias: every thread with it, or an empty page", async () => {
      expect(await names("?alias=first")).toEqual(["beta", "alpha one"]);
      expect(await names("?alias=second")).toEqual(["alpha two"]);
      expect(await names("?alias=nobody")).toEqual([]);
    });

    it("filters by a name prefix, case-sensitive and literal", async () => {
      expect(await names("?starts_with=alpha")).toEqual(["alpha two", "alpha one"]);
      expect(await names("?starts_with=Alpha")).toEqual([]);
      expect(await names(`?starts_with=${encodeURIComponent("a.b")}`)).toEqual(["a.b literal"]);
      for (const odd of ["(", "%", "a_b", "a%", "[", "\\", "*", "$", "\u0000", "a.b literal and more"])
        expect(await names(`?starts_with=${encodeURIComponent(odd)}`), odd).toEqual([]);
      expect(await names("?starts_with=alpha&alias=second")).toEqual(["alpha two"]);
      const counted = (await lister.get("/threads?starts_with=alpha&page_size=1")).body.pagination;
      expect(counted).toMatchObject({ total_count: 2, total_pages: 2 });
    });

    it("filters by creator", async () => {
      expect(await names(`?created_by=${listerId}`)).toHaveLength(5);
      expect(await names(`?created_by=${listerId.toUpperCase()}&starts_with=alpha`)).toEqual([
        "alpha two",
        "alpha one",
      ]);
      expect(await names(`?created_by=${uuid()}`)).toEqual([]);
      expect(await names(`?created_by=${adminUserId}`)).toEqual([]); // another organization's user
    });

    it.each(["page_size=0", "page_size=101", "page=x", "created_by=someone", "alias=a&alias=b"])(
      "400 for %s",
      async (query) => {
        expectError(await lister.get(`/threads?${query}`), 400, "ValidationError");
      },
    );
  });

  describe("messages", () => {
    it("CreateMessage appends at the next index: 201, MessageDetail's keys exactly, the thread counts it", async () => {
      const t = await thread({ messages: [turn(0), turn(1)] });
      const res = await admin.post(`/threads/${t.thread_id}/messages`, { input: "hello", output: "hi there" });
      expect(res.status).toBe(201);
      expect(keysOf(res.body)).toEqual(messageKeys);
      const m = messageSchema.parse(res.body);
      expect(m).toMatchObject({
        thread_id: t.thread_id,
        index: 2,
        input: "hello",
        output: "hi there",
        metadata: {},
        created_by: adminUserId,
      });
      expect(m.created_at).toBe(m.updated_at);
      expect((await admin.get(`/threads/${t.thread_id}`)).body).toMatchObject({
        message_count: 3,
        messages_length: lengthOf([turn(0), turn(1)]) + "hello".length + "hi there".length,
      });
      expect((await messagesOf(t.thread_id)).messages.at(-1)).toEqual(m);
    });

    it("takes any strings as input and output, and unknown keys into metadata", async () => {
      const t = await thread();
      const artifact = JSON.stringify({ type: "TextArtifact", value: "naïve 🧵\nline two" });
      const res = await admin.post(`/threads/${t.thread_id}/messages`, {
        input: "",
        output: artifact,
        metadata: { run_id: "r" },
        extra: [1],
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ input: "", output: artifact, metadata: { run_id: "r", extra: [1] } });
      const controls = "nul \u0000, escape \u001b[31m, tab \t, DEL \u007f";
      const odd = await admin.post(`/threads/${t.thread_id}/messages`, { input: controls, output: controls });
      expect(odd.status).toBe(201);
      expect((await admin.get(`/messages/${odd.body.message_id}`)).body).toMatchObject({
        input: controls,
        output: controls,
      });
    });

    it("refuses a malformed message, naming each field, and writes nothing", async () => {
      const t = await thread();
      const body = expectError(
        await admin.post(`/threads/${t.thread_id}/messages`, { input: 1, metadata: [] }),
        400,
        "ValidationError",
      );
      expect(body.errors.map((e) => e.path).sort()).toEqual(["body.input", "body.metadata", "body.output"]);
      expectError(await admin.post(`/threads/${t.thread_id}/messages`), 400, "ValidationError");
      expect((await admin.get(`/threads/${t.thread_id}`)).body.message_count).toBe(0);
    });

    it("ListMessages pages them in conversation order, oldest first", async () => {
      const t = await thread({ messages: [turn(0), turn(1), turn(2)] });
      for (const n of [3, 4]) await admin.post(`/threads/${t.thread_id}/messages`, turn(n));
      const first = await messagesOf(t.thread_id, "?page_size=2");
      expect(first.pagination).toEqual({ page_number: 1, page_size: 2, total_count: 5, total_pages: 3, next_page: 2 });
      const pages = [first, await messagesOf(t.thread_id, "?page=2&page_size=2")];
      pages.push(await messagesOf(t.thread_id, "?page=3&page_size=2"));
      expect(pages[2]!.pagination).toMatchObject({ page_number: 3, previous_page: 2 });
      expect(pages.flatMap((p) => p.messages.map((m) => [m.index, m.input]))).toEqual(
        [0, 1, 2, 3, 4].map((n) => [n, turn(n).input]),
      );
      expect((await messagesOf(t.thread_id, "?page=4&page_size=2")).messages).toEqual([]);
      expectError(await admin.get(`/threads/${t.thread_id}/messages?page_size=101`), 400, "ValidationError");
    });

    it("ListMessages without page_size answers the whole thread (griptape's memory loads once, then stores it back)", async () => {
      const t = await thread({ messages: Array.from({ length: 45 }, (_, n) => turn(n)) });
      const whole = await messagesOf(t.thread_id);
      expect(whole.messages.map((m) => m.index)).toEqual(Array.from({ length: 45 }, (_, n) => n));
      expect(whole.pagination).toMatchObject({ page_number: 1, total_count: 45, total_pages: 1 });
      expect((await messagesOf(t.thread_id, "?page_size=20")).messages).toHaveLength(20);
      expect((await messagesOf(t.thread_id, "?page=2")).messages).toEqual([]); // a page of the whole thread
    });

    it("GetMessage answers one message; 404 for an unknown id, 400 for a malformed one", async () => {
      const t = await thread({ messages: [turn(0)] });
      const [m] = (await messagesOf(t.thread_id)).messages;
      const res = await admin.get(`/api/messages/${m!.message_id.toUpperCase()}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(m);
      expectError(await admin.get(`/messages/${uuid()}`), 404, "NotFound");
      expectError(await admin.patch(`/messages/${uuid()}`, { output: "x" }), 404, "NotFound");
      expectError(await admin.delete(`/messages/${uuid()}`), 404, "NotFound");
      expect(expectError(await admin.get("/messages/nope"), 400, "ValidationError").errors[0]?.path).toBe(
        "path.message_id",
      );
    });

    it("UpdateMessage changes only the fields sent; its index stays; the thread's length follows", async () => {
      const t = await thread({ messages: [turn(0), turn(1)] });
      const [, m] = (await messagesOf(t.thread_id)).messages;
      await laterThan(m!.updated_at);
      const res = await admin.patch(`/messages/${m!.message_id}`, { output: "short", metadata: { edited: true } });
      expect(res.status).toBe(200);
      expect(keysOf(res.body)).toEqual(messageKeys);
      const { updated_at, ...rest } = messageSchema.parse(res.body);
      expect(rest).toEqual({ ...m, output: "short", metadata: { edited: true }, updated_at: undefined });
      expect(Date.parse(updated_at)).toBeGreaterThan(Date.parse(m!.updated_at));
      expect((await admin.get(`/messages/${m!.message_id}`)).body).toEqual(res.body);
      expect((await admin.get(`/threads/${t.thread_id}`)).body.messages_length).toBe(
        lengthOf([turn(0), { input: turn(1).input, output: "short" }]),
      );

      const kept = (await admin.patch(`/messages/${m!.message_id}`, { input: "new input" })).body;
      expect(kept).toMatchObject({ index: 1, input: "new input", output: "short", metadata: { edited: true } });
    });

    it("a refused UpdateMessage changes nothing", async () => {
      const t = await thread({ messages: [turn(0)] });
      const [m] = (await messagesOf(t.thread_id)).messages;
      const body = expectError(
        await admin.patch(`/messages/${m!.message_id}`, { input: 5, output: "fine", metadata: "x" }),
        400,
        "ValidationError",
      );
      expect(body.errors.map((e) => e.path).sort()).toEqual(["body.input", "body.metadata"]);
      expect((await admin.get(`/messages/${m!.message_id}`)).body).toEqual(m);
    });

    it("DeleteMessage: 204, then 404; the others keep their indexes", async () => {
      const t = await thread({ messages: [turn(0), turn(1), turn(2)] });
      const [, middle] = (await messagesOf(t.thread_id)).messages;
      const res = await admin.delete(`/messages/${middle!.message_id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectError(await admin.get(`/messages/${middle!.message_id}`), 404, "NotFound");
      expectError(await admin.delete(`/messages/${middle!.message_id}`), 404, "NotFound");
      expect((await messagesOf(t.thread_id)).messages.map((m) => m.index)).toEqual([0, 2]);
      expect((await admin.get(`/threads/${t.thread_id}`)).body).toMatchObject({
        message_count: 2,
        messages_length: lengthOf([turn(0), turn(2)]),
      });
      const next = await admin.post(`/threads/${t.thread_id}/messages`, turn(3));
      expect(next.body.index).toBe(3);
    });
  });
});
