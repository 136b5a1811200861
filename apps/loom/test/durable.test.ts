import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { type AllInOne, runAllInOneToExit, startAllInOne } from "@loom/test-stacks/all-in-one";
import { freshDataDir } from "@loom/testing/data-dir";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { freePort } from "@loom/testing/processes";
import { afterAll, describe, expect, it, vi } from "vitest";

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
    tool: (await admin.get(`/tools/${made.toolId}`)).body,
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
  toolId: string;
}

/** A user key, an assistant, a finished run with its events, a structure-run log, an asset and a tool. */
async function makeEverything(admin: ApiClient): Promise<Made> {
  const me = (await admin.get("/users")).body.users[0];
  const userKey = (await admin.post(`/users/${me.user_id}/api-keys`, { name: "script" })).body;
  expect(userKey.value).toMatch(/^loom_/);
  const assistantId = (await admin.post("/assistants", { name: "echo", input: "Say {{ args[0] }}" })).body.assistant_id;
  const runId = (await admin.post(`/assistants/${assistantId}/runs`, { args: ["hello"] })).body.assistant_run_id;
  await vi.waitFor(async () => expect((await admin.get(`/assistant-runs/${runId}`)).body.status).toBe("SUCCEEDED"), {
    timeout: 15_000,
    interval: 20,
  });
  const structureRunId = crypto.randomUUID();
  const appended = await admin.post(`/structure-runs/${structureRunId}/events`, [
    {
      type: "StartStructureRunEvent",
      timestamp: 1_790_000_000.5,
      payload: { n: 1, nested: { list: [1, "two", null] } },
    },
    { type: "FinishStructureRunEvent", timestamp: 1_790_000_001.25, payload: {} },
  ]);
  expect(appended.status).toBe(202);
  const bucketId = (await admin.post("/buckets", { name: "notes" })).body.bucket_id;
  expect((await admin.put(`/buckets/${bucketId}/assets`, { name: "notes.txt" })).status).toBe(201);
  const putUrl = (await admin.post(`/buckets/${bucketId}/asset-urls/notes.txt`, { operation: "PUT" })).body.url;
  expect(
    (await fetch(putUrl, { method: "PUT", body: "kept across restarts", headers: { "content-type": "text/plain" } }))
      .status,
  ).toBe(200);
  const downloadUrl = (await admin.post(`/buckets/${bucketId}/asset-urls/notes.txt`, { operation: "GET" })).body.url;
  const tool = await admin.post("/tools", {
    name: "calculator",
    server: { url: "http://127.0.0.1:9/mcp", transport: "mcp", headers: { "X-Team": { value: "blue" } } },
  });
  expect(tool.status).toBe(201);
  return {
    userKeyId: userKey.api_key_id,
    userKey: userKey.value,
    assistantId,
    runId,
    structureRunId,
    bucketId,
    downloadUrl,
    toolId: tool.body.tool_id,
  };
}

describe.each(["SIGKILL", "SIGTERM"] as const)(
  "the all-in-one process stopped by %s keeps its data directory",
  (signal) => {
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
      expect(before.tool.server.headers).toEqual({ "X-Team": { value: "blue" } });

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
  },
);

describe("a second process on the same data directory", () => {
  let loom: AllInOne | undefined;
  afterAll(async () => void (await loom?.stop("SIGKILL")));

  it("is refused with a message naming the directory and the process that holds it", async () => {
    const dir = freshDataDir();
    loom = await startAllInOne({ LOOM_DATA_DIR: dir, PORT: "0" });
    const second = await runAllInOneToExit({ LOOM_DATA_DIR: dir, PORT: "0" });
    expect(second.code).toBe(1);
    expect(second.output).toContain(
      `the data directory ${dir} is in use by another Loom process (pid ${loom.child.pid})`,
    );
    expect(second.output).not.toMatch(/\n\s+at /); // no stack trace
    // Whatever LOG_LEVEL says: a process that will not start says why.
    const silent = await runAllInOneToExit({ LOOM_DATA_DIR: dir, PORT: "0", LOG_LEVEL: "silent" });
    expect(silent.code).toBe(1);
    expect(silent.output).toContain(`the data directory ${dir} is in use by another Loom process`);
    // The first one is untouched and still serves.
    expect((await fetch(`${loom.url}/readyz`)).status).toBe(200);
  }, 60_000);
});

/** Files under a directory, recursively, as paths relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1));
}

/** An upload's body that says its own length (`<length>:` then filler), so a download shows whether it is whole and whose it is. */
function selfDescribing(length: number): Buffer {
  const bytes = Buffer.alloc(length, 0x61);
  bytes.write(`${length}:`, 0, "latin1");
  return bytes;
}

/**
 * Overwrites and deletes on a few assets from several workers at once, until
 * the process goes away (a request fails to connect). Answers how many
 * uploads and deletes were acknowledged.
 */
async function overwriteAndDelete(admin: ApiClient, bucketId: string, names: string[], workers: number) {
  const done = { uploads: 0, deletes: 0 };
  const worker = async () => {
    for (;;) {
      const name = names[Math.floor(Math.random() * names.length)]!;
      try {
        if (Math.random() < 0.25) {
          if ((await admin.delete(`/buckets/${bucketId}/assets/${name}`)).status === 204) done.deletes++;
          continue;
        }
        await admin.put(`/buckets/${bucketId}/assets`, { name });
        const url = (await admin.post(`/buckets/${bucketId}/asset-urls/${name}`, { operation: "PUT" })).body?.url;
        if (!url) continue; // deleted in between by another worker
        const length = 10_000 + Math.floor(Math.random() * 200_000);
        if ((await fetch(url, { method: "PUT", body: selfDescribing(length) })).status === 200) done.uploads++;
      } catch {
        return; // the process is gone
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return done;
}

describe("uploads and deletes of an all-in-one process killed by SIGKILL, again and again", () => {
  let loom: AllInOne | undefined;
  afterAll(async () => void (await loom?.stop("SIGKILL")));

  it("leave every asset's record matching its bytes, and no orphan bytes after the next sweep", async () => {
    const dir = freshDataDir();
    const port = String(await freePort());
    loom = await startAllInOne({ LOOM_DATA_DIR: dir, PORT: port });
    const key = (await loom.bootstrapKey())!;
    const admin = apiClient(loom.url, key);
    const organizationId = (await admin.get("/users")).body.users[0].organizations[0];
    const bucketId = (await admin.post("/buckets", { name: "crash" })).body.bucket_id;
    const names = Array.from({ length: 12 }, (_, i) => `asset-${i}.bin`);
    const kills = 6;
    const acknowledged = { uploads: 0, deletes: 0 };
    for (let kill = 0; kill < kills; kill++) {
      if (kill > 0) loom = await startAllInOne({ LOOM_DATA_DIR: dir, PORT: port });
      const load = overwriteAndDelete(admin, bucketId, names, 8);
      await new Promise((resolve) => setTimeout(resolve, 1_000 + Math.random() * 1_000));
      expect(await loom.stop("SIGKILL")).toBeNull();
      const done = await load;
      acknowledged.uploads += done.uploads;
      acknowledged.deletes += done.deletes;
    }
    expect(acknowledged.uploads).toBeGreaterThan(kills * 5);

    // The next start sweeps (with no grace: nothing is uploading now).
    loom = await startAllInOne({ LOOM_DATA_DIR: dir, PORT: port, ORPHAN_BLOB_GRACE_SECONDS: "0" });
    const assets = (await admin.get(`/buckets/${bucketId}/assets?page_size=100`)).body.assets as {
      name: string;
      size?: number;
    }[];
    // Every asset's record matches the bytes served: whole (they say their own length) and of the recorded size.
    const torn: string[] = [];
    for (const asset of assets) {
      const url = (await admin.post(`/buckets/${bucketId}/asset-urls/${asset.name}`, { operation: "GET" })).body.url;
      const answer = await fetch(url);
      const bytes = Buffer.from(await answer.arrayBuffer());
      const whole =
        asset.size === undefined
          ? answer.status === 404
          : answer.status === 200 &&
            bytes.length === asset.size &&
            bytes.toString("latin1", 0, 12).startsWith(`${asset.size}:`);
      if (!whole) torn.push(`${asset.name}: size ${asset.size}, answer ${answer.status} with ${bytes.length} bytes`);
    }
    // One file per asset with bytes, nothing else: no orphan survives the sweep (at start, not awaited: polled).
    const withBytes = assets.filter((a) => a.size !== undefined).length;
    const blobDir = join(dir, "blobs");
    const orphans = async () => (await filesUnder(join(blobDir, organizationId, bucketId))).length - withBytes;
    await vi.waitFor(async () => expect(await orphans()).toBe(0), { timeout: 10_000, interval: 100 }).catch(() => {});
    expect({ torn, orphans: await orphans(), incoming: await filesUnder(join(blobDir, ".incoming")) }).toEqual({
      torn: [],
      orphans: 0,
      incoming: [],
    });
    const swept = /"blobs":(\d+)[^\n]*no asset names/.exec(loom.output())?.[1] ?? "0";
    console.info(
      `${kills} SIGKILLs during overwrites and deletes: ${acknowledged.uploads} uploads and ${acknowledged.deletes} deletes acknowledged; ` +
        `${assets.length} assets, ${withBytes} with bytes, all whole; the start-up sweep removed ${swept} orphan blob(s)`,
    );
  }, 180_000);
});
