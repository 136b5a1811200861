import { loadConfig } from "@loom/runtime/config";
import { createLogger } from "@loom/telemetry/logger";
import { freshDataDir } from "@loom/testing/data-dir";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loomConfigSchema } from "../src/config.ts";
import { type EmbeddedLoom, startEmbedded } from "../src/embedded.ts";

/** The all-in-one process with its embedded defaults: the in-memory stores and loom:echo. */
describe("a loom:echo run on the embedded process", () => {
  let loom: EmbeddedLoom;
  let api: ApiClient;
  beforeAll(async () => {
    const key = "loom_echo-test-0123456789abcdefghijklmnopqrstuvwxyz";
    const config = loadConfig(loomConfigSchema, { PORT: "0", LOOM_DATA_DIR: freshDataDir(), BOOTSTRAP_API_KEY: key });
    loom = await startEmbedded(config, createLogger("test", "silent"));
    await loom.finishStart(); // requests wait for the end of the start (the bootstrap), as in main.ts
    api = apiClient(loom.server.url, key);
  });
  afterAll(() => loom?.server.close());

  // How fast is `pnpm bench`'s business (the runs rows at 1 client); here only what happens.
  it("goes from QUEUED to SUCCEEDED with its output and events", async () => {
    const assistantId = (await api.post("/assistants", { name: "echo", input: "Say {{ args[0] }}" })).body.assistant_id;
    const created = await api.post(`/assistants/${assistantId}/runs`, { args: ["hello"], stream: true });
    expect(created.body.status).toBe("QUEUED");
    let run = created.body;
    let events: Array<{ type: string; payload: { model?: string } }> = [];
    await vi.waitFor(
      async () => {
        run = (await api.get(`/assistant-runs/${run.assistant_run_id}`)).body;
        events = (await api.get(`/assistant-runs/${run.assistant_run_id}/events`)).body.events;
        expect(run.status).toBe("SUCCEEDED");
        expect(events.at(-1)?.type).toBe("AssistantRunSucceeded");
      },
      { timeout: 10_000, interval: 5 },
    );
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output).toMatchObject({ type: "TextArtifact", value: "Echo: Say hello" });
    expect(events.at(-1)?.type).toBe("AssistantRunSucceeded");
    expect(events.filter((e) => e.type === "TextChunkEvent").length).toBeGreaterThanOrEqual(3);
    expect(events.find((e) => e.type === "StartPromptEvent")?.payload.model).toBe("loom:echo");
  });
});
