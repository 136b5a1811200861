import { Code, ConnectError, type Interceptor, type StreamResponse, type UnaryResponse } from "@connectrpc/connect";
import { Histogram } from "prom-client";
import { metricsRegistry } from "./metrics.ts";

const rpcDuration = new Histogram({
  name: "loom_rpc_server_duration_seconds",
  help: "Connect calls served, by method (service/method) and code; a stream's duration runs until it ends",
  labelNames: ["method", "code"] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [metricsRegistry],
});

/** Connect's code names, snake case as on the wire ("not_found"); "ok" for success. */
const codeName = (code: Code | undefined) =>
  code === undefined ? "ok" : Code[code].replace(/[a-z](?=[A-Z])/g, "$&_").toLowerCase();

function observe(method: string, code: Code | undefined, startedMs: number): void {
  rpcDuration.observe({ method, code: codeName(code) }, (performance.now() - startedMs) / 1000);
}

const codeOf = (error: unknown) => (error instanceof ConnectError ? error.code : Code.Unknown);

/**
 * Server side: every call's duration and code (the code the caller gets:
 * outermost, so after errors are sanitized). A streaming call is observed
 * when its stream ends, not when it starts.
 */
export function observeCalls(): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const method = `${req.service.typeName}/${req.method.name}`;
    let res: UnaryResponse | StreamResponse;
    try {
      res = await next(req);
    } catch (error) {
      observe(method, codeOf(error), started);
      throw error;
    }
    if (!res.stream) {
      observe(method, undefined, started);
      return res;
    }
    return { ...res, message: observedStream(res as StreamResponse, method, started) };
  };
}

async function* observedStream(res: StreamResponse, method: string, started: number): AsyncIterable<never> {
  let code: Code | undefined = Code.Canceled; // a consumer that stops early cancelled the stream
  try {
    yield* res.message as AsyncIterable<never>;
    code = undefined;
  } catch (error) {
    code = codeOf(error);
    throw error;
  } finally {
    observe(method, code, started);
  }
}
