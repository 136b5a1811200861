import { afterAll, describe, expect, it, vi } from "vitest";
import { apiClient, type ApiClient } from "@loom/testing/http";
import { freshDataDir } from "@loom/testing/data-dir";
import { freePort } from "@loom/testing/processes";
import { runAllInOneToExit, startAllInOne, type AllInOne } from "./all-in-one.ts";


/** Everything a user made, as the API answers it: read back after the restart, it must be the same. */
async function readBack(admin: ApiClient, made: Made) {
  const run = (await admin.get(`/assistant-runs/${made.runId}`)).body;
  return {
    users: (await admin.get("/users")).body,
    userKey: (await admin.get(`/api-keys/${made.userKeyId}`)).body,
    assistant: (await admin.get(`/assistants/${made.assistantId}`)).body,
    run,
    runs: (await admin.get(`/assistants/${made.assistantId}/runs`)).body,
    runEvents: (await admin.get(`/assistant-runs/${made.runId}/events`)).body,
    structureEvents: (await admin.get(`/structure-runs/${made.structureRunId}/events`)).body,
    bucket: (await admin.get(`/buckets/${made.bucketId}`)).body,
    asset: (await admin.get(`/buckets/${made.bucketId}/assets/notes.txt`)).body,
    bytes: await (await fetch(made.downloadUrl)).text(),
  };
}

interface Made {
  userKeyId: string;
  userKey: string;
  assistantId: string;
  runId: string;
  structureRunId: string;
  bucketId: string;
  downloadUrl: string;
}

/** A user key, an assistant, a finished run with its events, a structure-run log and an asset. */
async function makeEverything(admin: ApiClient): Promise<Made> {
  const me = (await admin.get("/users")).body.users[0];
  const userKey = (await admin.post(`/users/${me.user_id}/api-keys`, { name: "script" })).body;
  expect(userKey.value).toMatch(/^loom_/);
  const assistantId = (await admin.post("/assistants", { name: "echo", input: "Say {{ args[0] }}" })).body.assistant_id;
  const runId = (await admin.post(`/assistants/${assistantId}/runs`, { args: ["hello"] })).body.assistant_run_id;
  await vi.waitFor(async () => expect((await admin.get(`/assistant-runs/${runId}`)).body.status).toBe("SUCCEEDED"), { timeout: 15_000, interval: 20 });
  const structureRunId = crypto.randomUUID();
  const appended = await admin.post(`/structure-runs/${structureRunId}/events`, [
    { type: "StartStructureRunEvent", timestamp: 1_790_000_000.5, payload: { n: 1, nested: { list: [1, "two", null] } } },
    { type: "FinishStructureRunEvent", timestamp: 1_790_000_001.25, payload: {} },
  ]);
  expect(appended.status).toBe(202);
  const bucketId = (await admin.post("/buckets", { name: "notes" })).body.bucket_id;
  expect((await admin.put(`/buckets/${bucketId}/assets`, { name: "notes.txt" })).status).toBe(201);
  const putUrl = (await admin.post(`/buckets/${bucketId}/asset-urls/notes.txt`, { operation: "PUT" })).body.url;
  expect((await fetch(putUrl, { method: "PUT", body: "kept across restarts", headers: { "content-type": "text/plain" } })).status).toBe(200);
  const downloadUrl = (await admin.post(`/buckets/${bucketId}/asset-urls/notes.txt`, { operation: "GET" })).body.url;
  return { userKeyId: userKey.api_key_id, userKey: userKey.value, assistantId, runId, structureRunId, bucketId, downloadUrl };
}

describe.each(["SIGKILL", "SIGTERM"] as const)("the all-in-one process stopped by %s keeps its data directory", (signal) => {
  let loom: AllInOne | undefined;
  afterAll(async () => void (await loom?.stop("SIGKILL")));

  it("reads back every record, the same bootstrap key works, and nothing is bootstrapped twice", async () => {
    const dir = freshDataDir();
    const port = String(await freePort());
    loom = await startAllInOne({ LOOM_DATA_DIR: dir, PORT: port });
    expect(loom.output()).toContain(`data directory ${dir} (new: created)`);
    const key = await loom.bootstrapKey();
    expect(key).toMatch(/^loom_/);
    const admin = apiClient(loom.url, key);
    const made = await makeEverything(admin);
    const before = await readBack(admin, made);
    expect(before.run.status).toBe("SUCCEEDED");
    expect(before.runEvents.events.at(-1).type).toBe("AssistantRunSucceeded");
    expect(before.structureEvents.events).toHaveLength(2);
    expect(before.bytes).toBe("kept across restarts");

    const code = await loom.stop(signal);
    expect(code).toBe(signal === "SIGTERM" ? 0 : null);

    loom = await startAllInOne({ LOOM_DATA_DIR: dir, PORT: port });
    expect(loom.output()).toContain(`data directory ${dir} (reopened)`);
    const after = await readBack(apiClient(loom.url, key), made);
    expect(after).toEqual(before);
    // The user key authenticates too, and the old signed URL still works (the signing key was kept).
    expect((await apiClient(loom.url, made.userKey).get("/assistants")).status).toBe(200);
    expect(loom.output()).not.toContain("shown once");
    expect(loom.output()).not.toContain("bootstrapped the first user");
  }, 90_000);
});

describe("a second process on the same data directory", () => {
  let loom: AllInOne | undefined;
  afterAll(async () => void (await loom?.stop("SIGKILL")));

  it("is refused with a message naming the directory and the process that holds it", async () => {
    const dir = freshDataDir();
    loom = await startAllInOne({ LOOM_DATA_DIR: dir, PORT: "0" });
    const second = await runAllInOneToExit({ LOOM_DATA_DIR: dir, PORT: "0" });
    expect(second.code).toBe(1);
    expect(second.output).toContain(`the data directory ${dir} is in use by another Loom process (pid ${loom.child.pid})`);
    expect(second.output).not.toMatch(/\n\s+at /); // no stack trace
    // Whatever LOG_LEVEL says: a process that will not start says why.
    const silent = await runAllInOneToExit({ LOOM_DATA_DIR: dir, PORT: "0", LOG_LEVEL: "silent" });
    expect(silent.code).toBe(1);
    expect(silent.output).toContain(`the data directory ${dir} is in use by another Loom process`);
    // The first one is untouched and still serves.
    expect((await fetch(`${loom.url}/readyz`)).status).toBe(200);
  }, 60_000);
});
