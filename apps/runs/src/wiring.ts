import type { Transport } from "@connectrpc/connect";
import type { Bus } from "@loom/bus/bus";
import { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import { RulesetsService } from "@loom/proto/assistants/v1/rulesets_pb";
import { EventsService } from "@loom/proto/events/v1/events_pb";
import { KnowledgeBaseQueriesService } from "@loom/proto/knowledge/v1/knowledge_base_queries_pb";
import { KnowledgeBasesService } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import { ChatService } from "@loom/proto/runs/v1/chat_pb";
import { ActivitiesService } from "@loom/proto/tools/v1/activities_pb";
import { ToolsService } from "@loom/proto/tools/v1/tools_pb";
import { loadOnce } from "@loom/runtime/load-once";
import type { RpcService } from "@loom/server/rpc-service";
import { clientFor } from "@loom/server/transports";
import { openStore, type StoreSettings } from "@loom/store/open";
import type { Logger } from "@loom/telemetry/logger";
import type { LanguageModel } from "ai";
import { createEchoChat } from "./chat/echo-chat.ts";
import type { ChatBackend } from "./chat/port.ts";
import { createChatService } from "./chat/service.ts";
import { measureQueue } from "./metrics.ts";
import type { Model } from "./models/port.ts";
import { type ModelConfig, resolveChatModels, resolveModel } from "./models/resolve.ts";
import { createRunLog } from "./run-log.ts";
import { createRunsService } from "./service.ts";
import type { RunsStore } from "./store/port.ts";
import { createSqliteRunsStore } from "./store/sqlite.ts";
import { createRunWorker, type RunWorker } from "./worker.ts";

export interface RunSettings extends ModelConfig {
  RUN_TIMEOUT_MS: number;
  RUN_LEASE_MS: number;
  RUN_POLL_MS: number;
  RUN_WORKER_CONCURRENCY: number;
  RUN_MAX_PER_ORGANIZATION: number;
  RUN_MAX_QUEUED_PER_ORGANIZATION: number;
  CHAT_TIMEOUT_MS: number;
  THREAD_HISTORY_MAX_MESSAGES: number;
  THREAD_HISTORY_MAX_TOKENS: number;
  RUN_MAX_STEPS: number;
  RUN_TOOL_CALL_TIMEOUT_MS: number;
  RUN_TOOL_RESULT_MAX_CHARS: number;
  RUN_APPROVAL_TIMEOUT_MS: number;
}

/** MongoDB when a URL is given, else SQLite, its calls acknowledged by the service's answers (`RunsStore.durable`). */
export const openRunsStore = (settings: StoreSettings): Promise<RunsStore> =>
  openStore(
    settings,
    {
      sqlite: createSqliteRunsStore,
      mongo: async (m) => (await import("./store/mongo.ts")).createMongoRunsStore(m.db, m.ping, m.close),
    },
    "by durable()",
  );

/**
 * Store, model, run log, service and a started worker: shared by main.ts, the
 * all-in-one process and the tests. Closing the service stops the worker first.
 */
export async function wireRuns(
  store: RunsStore,
  settings: RunSettings,
  peers: {
    assistants: Transport;
    events: Transport;
    tools: Transport;
    knowledge: Transport;
    bus: Bus;
    logger: Logger;
    model?: Model;
  },
): Promise<{ service: RpcService; worker: RunWorker }> {
  await store.init();
  const model = peers.model ?? resolveModel(settings);
  const chat = createChatService({ backends: chatBackends(settings), timeoutMs: settings.CHAT_TIMEOUT_MS });
  const log = createRunLog(clientFor(EventsService, peers.events));
  const service = createRunsService({
    store,
    assistants: clientFor(AssistantsService, peers.assistants),
    rulesets: clientFor(RulesetsService, peers.assistants),
    knowledgeBases: clientFor(KnowledgeBasesService, peers.knowledge),
    tools: clientFor(ToolsService, peers.tools),
    log,
    bus: peers.bus,
    logger: peers.logger,
    maxQueuedPerOrganization: settings.RUN_MAX_QUEUED_PER_ORGANIZATION,
  });
  const worker = createRunWorker({
    store,
    log,
    model,
    tools: {
      activities: clientFor(ActivitiesService, peers.tools),
      maxSteps: settings.RUN_MAX_STEPS,
      approvalTimeoutMs: settings.RUN_APPROVAL_TIMEOUT_MS,
      toolCall: { timeoutMs: settings.RUN_TOOL_CALL_TIMEOUT_MS, maxResultChars: settings.RUN_TOOL_RESULT_MAX_CHARS },
    },
    knowledge: clientFor(KnowledgeBaseQueriesService, peers.knowledge),
    bus: peers.bus,
    logger: peers.logger,
    leaseMs: settings.RUN_LEASE_MS,
    pollMs: settings.RUN_POLL_MS,
    runTimeoutMs: settings.RUN_TIMEOUT_MS,
    historyWindow: {
      maxMessages: settings.THREAD_HISTORY_MAX_MESSAGES,
      maxTokens: settings.THREAD_HISTORY_MAX_TOKENS,
    },
    concurrency: settings.RUN_WORKER_CONCURRENCY,
    maxRunningPerOrganization: settings.RUN_MAX_PER_ORGANIZATION,
  });
  worker.start();
  const unmeasureQueue = measureQueue(store);
  peers.logger.info({ model: model.id, worker: worker.workerId }, "run worker started");
  return {
    worker,
    service: {
      ...service,
      routes: (router) => {
        service.routes(router);
        router.service(ChatService, chat);
      },
      close: async () => {
        unmeasureQueue();
        await worker.stop();
        await service.close();
      },
    },
  };
}

/** The chat models by name, DEFAULT_MODEL first. */
function chatBackends(settings: ModelConfig): Map<string, ChatBackend> {
  const backends = new Map<string, ChatBackend>();
  for (const [id, entry] of resolveChatModels(settings))
    backends.set(id, entry.echo ? createEchoChat(settings.ECHO_TOKEN_INTERVAL_MS) : aiSdkChat(id, entry.model));
  return backends;
}

/** Chat through the AI SDK, loaded on the first message (docs/decisions.md, "Loading only what is used"). */
function aiSdkChat(id: string, model: () => Promise<LanguageModel>): ChatBackend {
  const built = loadOnce(async () =>
    (await import("./chat/ai-sdk-chat.ts")).createAiSdkChat({ id, model: await model() }),
  );
  return {
    id,
    reply: async (call) => (await built()).reply(call),
    stream: async (call, onDelta) => (await built()).stream(call, onDelta),
  };
}
