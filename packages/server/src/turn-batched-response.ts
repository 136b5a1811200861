import { createServer, type IncomingMessage, type RequestListener, type Server, ServerResponse } from "node:http";
import type { Logger } from "@loom/telemetry/logger";
import {
  type ConnectionLimits,
  connectionServerOptions,
  defaultConnectionLimits,
  limitConnections,
} from "./connection-limits.ts";

/**
 * A response whose `end` waits for the end of the event loop's turn: the
 * responses finished during one turn leave together, right after it (the
 * check phase), instead of one at a time between the handlers still running.
 *
 * Why: a client on the same host (a load balancer, a sidecar, the gateway in
 * front of a service) sleeps between answers, and every answer that finds it
 * asleep pays for waking it inside the server's `write` — measured on a
 * 2-core VM, that wake-up was the largest single cost of a GetApiKey, and
 * batching the ends of a turn doubled the all-in-one's throughput
 * (docs/benchmarks.md, "Turn-batched responses"). The wait lasts until
 * the turn's I/O callbacks have run, never a timer: an idle server answers
 * as soon as before.
 */
class TurnBatchedResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  override end(...args: unknown[]): this {
    endsThisTurn.push([this, args]);
    if (endsThisTurn.length === 1) setImmediate(endAll);
    return this;
  }

  /** The real `end`, for the batch. */
  endNow(args: unknown[]): void {
    (super.end as (...a: unknown[]) => this)(...args);
  }
}

let endsThisTurn: Array<[TurnBatchedResponse, unknown[]]> = [];

function endAll(): void {
  const batch = endsThisTurn;
  endsThisTurn = [];
  for (const [response, args] of batch) {
    // One bad response must not keep the others' answers back, nor crash the process.
    try {
      response.endNow(args);
    } catch (error) {
      response.destroy(error as Error);
    }
  }
}

/**
 * An HTTP/1.1 server whose responses leave in batches per event-loop turn,
 * with Loom's connection limits (connection-limits.ts): no limit on how long
 * a request may take to arrive while it keeps arriving (an upload through a
 * signed blob URL may be gigabytes on a slow link), but headers, idle
 * kept-alive connections and stalled bodies time out, and connections past
 * the cap are refused.
 */
export function createHttpServer(
  handler: RequestListener,
  limits: ConnectionLimits = defaultConnectionLimits,
  logger?: Logger,
): Server {
  return limitConnections(
    createServer({ ServerResponse: TurnBatchedResponse, ...connectionServerOptions(limits) }, handler),
    limits,
    logger,
  );
}
