import type { z } from "zod";
import type { Bus } from "@loom/bus/bus";
import { openBus } from "@loom/bus/open";
import { loadConfig } from "@loom/runtime/config";
import { connectionLimitsFrom } from "./connection-limits.ts";
import { createLogger, type Logger } from "@loom/telemetry/logger";
import { releaseMemoryWhenQuiet } from "@loom/runtime/release-memory-when-quiet";
import { serveMetrics } from "./metrics-server.ts";
import { startRpcServer } from "./rpc-server.ts";
import type { RpcService } from "./rpc-service.ts";
import { failStartup, onShutdown } from "@loom/runtime/shutdown";
import { tracing } from "@loom/telemetry/tracing";

/** What every service run on its own reads (runtime/config.ts `serviceSettings`, `mongoSettings`). */
interface ServiceConfig {
  PORT: number;
  HOST: string;
  SERVICE_TOKEN: string;
  LOG_LEVEL: string;
  METRICS_PORT: number;
  HTTP_HEADERS_TIMEOUT_MS: number;
  HTTP_KEEP_ALIVE_TIMEOUT_MS: number;
  HTTP_BODY_IDLE_TIMEOUT_MS: number;
  HTTP_MAX_CONNECTIONS?: number | undefined;
  MONGODB_URL?: string | undefined;
  NATS_URL?: string | undefined;
}

/** What a service says about itself at start. */
export interface ServiceNotes {
  /** What it keeps ("assistants"), for the warning that it is kept in memory without MONGODB_URL. */
  keeps: string;
  /** For a service that uses the bus: what is lost without NATS_URL, for its warning. */
  withoutNats?: string;
}

/** Opens the store and wires the service. `bus` is NATS with NATS_URL, else the in-process bus. */
export type WireService<S extends z.ZodObject> = (config: z.infer<S>, peers: { logger: Logger; bus: Bus }) => Promise<RpcService>;

/**
 * The whole start of a service process (`main.ts`): configuration (a bad one
 * stops it, naming the variables), logging, the bus, the wiring, the RPC
 * server, `/metrics` on METRICS_PORT, memory given back after bursts
 * (`releaseMemoryWhenQuiet`), and a graceful shutdown on SIGTERM. One start-up for every service.
 */
export async function runService<S extends z.ZodObject>(name: string, schema: S, notes: ServiceNotes, wire: WireService<S>): Promise<void> {
  const logger = createLogger(name);
  try {
    const config = loadConfig(schema);
    const common = config as z.infer<S> & ServiceConfig;
    logger.level = common.LOG_LEVEL;
    if (!common.MONGODB_URL) logger.warn(`MONGODB_URL is not set: keeping ${notes.keeps} in an in-memory SQLite database, they are lost on restart (the all-in-one process keeps them in its data directory)`);
    if (notes.withoutNats && !common.NATS_URL) logger.warn(`NATS_URL is not set: ${notes.withoutNats}`);
    const bus = await openBus(common.NATS_URL, name, logger);
    const service = await wire(config, { logger, bus });
    // Listening first, so a taken port fails the start before `started` runs; requests wait for its end.
    const started = Promise.withResolvers<void>();
    const server = await startRpcServer({ services: [service], bus, serviceToken: common.SERVICE_TOKEN, logger, port: common.PORT, host: common.HOST, connections: connectionLimitsFrom(common), started: started.promise });
    const metrics = await serveMetrics(common.METRICS_PORT, common.HOST);
    await service.started?.();
    started.resolve();
    const memory = releaseMemoryWhenQuiet();
    // Before the lines that say it is up: a SIGTERM sent on reading them must find the graceful shutdown in place.
    onShutdown(logger, async () => {
      memory.stop();
      await server.close();
      await bus.close();
      await metrics.close();
      await tracing().shutdown();
    });
    logger.info({ url: server.url }, `${name} service listening`);
    logger.info({ url: `${metrics.url}/metrics` }, "metrics listening");
  } catch (error) {
    failStartup(logger, error);
  }
}
