import { randomBytes } from "node:crypto";
import { type SplitStack, startSplitStack } from "@loom/test-stacks/split-stack";
import { type FakeOpenAI, startFakeOpenAI } from "@loom/testing/fake-openai";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { type OwnServer, startOwnFerretDb, startOwnNats } from "@loom/testing/own-servers";

export interface FaultStack {
  /** This suite's own NATS and FerretDB: stop and start them at will. */
  nats: OwnServer;
  mongo: OwnServer;
  /** The model every run calls (DEFAULT_MODEL=openai-compatible:fake-model). */
  model: FakeOpenAI;
  split: SplitStack;
  api: ApiClient;
  /** The bootstrap API key `api` uses. */
  key: string;
  close(): Promise<void>;
}

/** The lease the fault stacks give runs: short, so a lost worker shows quickly. */
export const faultLeaseMs = 2_000;

/**
 * The split deployment (six Node processes) on NATS and FerretDB of its
 * own, with a fake OpenAI-compatible model the test controls (`runs`, `tools`: more
 * settings of those processes; `runsReplicas`: runs processes side by side, 1
 * unless told). Process logs
 * go to stderr at TEST_LOG_LEVEL (default: silent; the faults make noise on purpose).
 */
export async function startFaultStack(
  options: { runs?: Record<string, string>; tools?: Record<string, string>; runsReplicas?: number } = {},
): Promise<FaultStack> {
  const key = `loom_fault-${randomBytes(24).toString("base64url")}`;
  const started: Array<{ close(): Promise<void> }> = [];
  try {
    const nats = await startOwnNats();
    started.push(nats);
    const mongo = await startOwnFerretDb();
    started.push(mongo);
    const model = await startFakeOpenAI();
    started.push(model);
    const split = await startSplitStack(
      { MONGODB_URL: mongo.url, NATS_URL: nats.url, LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent" },
      {
        identity: { BOOTSTRAP_API_KEY: key },
        runs: {
          DEFAULT_MODEL: "openai-compatible:fake-model",
          OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
          RUN_LEASE_MS: String(faultLeaseMs),
          RUN_POLL_MS: "100",
          ...options.runs,
        },
        ...(options.tools ? { tools: options.tools } : {}),
      },
      {
        stdout: process.env.TEST_LOG_LEVEL ? "inherit" : "ignore",
        ...(options.runsReplicas ? { replicas: { runs: options.runsReplicas } } : {}),
      },
    );
    started.push({ close: () => split.stop() });
    const close = async () => {
      for (const part of started.reverse()) await part.close().catch(() => {});
    };
    return { nats, mongo, model, split, api: apiClient(split.gatewayUrl, key), key, close };
  } catch (error) {
    for (const part of started.reverse()) await part.close().catch(() => {});
    throw error;
  }
}

/** Polls `check` every 50 ms until it gives a value (not undefined) or `ms` pass. */
export async function waitUntil<T>(what: string, ms: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export { within } from "@loom/testing/within";
