import type { Bus } from "@loom/bus/bus";
import { openBus } from "@loom/bus/open";
import { runProcess } from "@loom/runtime/run-process";
import type { Logger } from "@loom/telemetry/logger";
import type { z } from "zod";
import { connectionLimitsFrom } from "./connection-limits.ts";
import { serveMetrics } from "./metrics-server.ts";
import { startRpcServer } from "./rpc-server.ts";
import type { RpcService } from "./rpc-service.ts";

/** What every service run on its own reads (runtime/config.ts `serviceSettings`, `mongoSettings`). */
interface ServiceConfig {
  PORT: number;
  HOST: string;
  SERVICE_TOKEN: string;
  METRICS_PORT: number;
  HTTP_HEADERS_TIMEOUT_MS: number;
  HTTP_KEEP_ALIVE_TIMEOUT_MS: number;
  HTTP_BODY_IDLE_TIMEOUT_MS: number;
  HTTP_MAX_CONNECTIONS?: number | undefined;
  MONGODB_URL?: string | undefined;
  NATS_URL?: string | undefined;
}

/** What a service says about itself at start (its row of the service registry). */
export interface ServiceNotes {
  /** What it keeps ("assistants"), for the warning that it is kept in memory without MONGODB_URL. */
  keeps: string;
  /** For a service that uses the bus: what is lost without NATS_URL, for its warning. */
  withoutNats?: string;
}

/** What the process hosting a service gives its wiring. `bus` is NATS with NATS_URL, else the in-process bus. */
export interface ProcessDeps {
  logger: Logger;
  bus: Bus;
}

/** Opens the store and wires the service; `Extra`: what a test may hand it besides (a model of its own). */
export type WireService<S extends z.ZodObject, Extra extends object = object> = (
  config: z.infer<S>,
  deps: ProcessDeps & Extra,
) => Promise<RpcService>;

/**
 * A service run on its own, from its settings: each app's `src/process.ts`,
 * started by its `main.ts` (`runService`) and by the test stacks.
 */
export interface ServiceProcess<S extends z.ZodObject = z.ZodObject, Extra extends object = object> {
  /** Its name in the service registry: its logger's, its bus connection's. */
  name: string;
  schema: S;
  notes: ServiceNotes;
  wire: WireService<S, Extra>;
}

/**
 * The whole start of a service process (`main.ts`), on `runProcess`: the
 * warnings for what it keeps in memory, the bus, the wiring, the RPC server,
 * `/metrics` on METRICS_PORT. One start-up for every service.
 */
export async function runService<S extends z.ZodObject>({
  name,
  schema,
  notes,
  wire,
}: ServiceProcess<S>): Promise<void> {
  await runProcess(name, schema, async (config, logger) => {
    const common = config as z.infer<S> & ServiceConfig;
    if (!common.MONGODB_URL)
      logger.warn(
        `MONGODB_URL is not set: keeping ${notes.keeps} in an in-memory SQLite database, they are lost on restart (the all-in-one process keeps them in its data directory)`,
      );
    if (notes.withoutNats && !common.NATS_URL) logger.warn(`NATS_URL is not set: ${notes.withoutNats}`);
    const bus = await openBus(common.NATS_URL, name, logger);
    const service = await wire(config, { logger, bus });
    // Listening first, so a taken port fails the start before `started` runs; requests wait for its end.
    const started = Promise.withResolvers<void>();
    const server = await startRpcServer({
      services: [service],
      bus,
      serviceToken: common.SERVICE_TOKEN,
      logger,
      port: common.PORT,
      host: common.HOST,
      connections: connectionLimitsFrom(common),
      started: started.promise,
    });
    const metrics = await serveMetrics(common.METRICS_PORT, common.HOST);
    await service.started?.();
    started.resolve();
    return {
      close: async () => {
        await server.close();
        await bus.close();
        await metrics.close();
      },
      announce: () => {
        logger.info({ url: server.url }, `${name} service listening`);
        logger.info({ url: `${metrics.url}/metrics` }, "metrics listening");
      },
    };
  });
}
