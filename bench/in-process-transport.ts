import { createClient, createRouterTransport, type Transport } from "@connectrpc/connect";
import { IdentityService } from "@loom/proto/identity/v1/identity_pb";
import { headersFor, principalHeaders, requirePrincipal } from "@loom/server/principal";
import type { RpcService } from "@loom/server/rpc-service";
import { inProcessTransport, serverInterceptors } from "@loom/server/transports";
import { createLogger } from "@loom/telemetry/logger";
import { percentile, printTable } from "./load.ts";

/**
 * Calls inside one process: Loom's in-process transport (messages handed
 * over, Connect's internal `invokeUnaryImplementation`) against Connect's
 * public `createRouterTransport` (serialized both ways, the HTTP-shaped
 * handler path), on one GetApiKey-like service with the same server
 * interceptors. Each round makes `calls` sequential unary calls through each,
 * alternating which goes first; a row is the median round.
 */
export async function benchInProcessTransport(options: { calls: number; rounds: number }): Promise<void> {
  const serviceToken = "bench-service-token";
  const logger = createLogger("bench", "silent");
  const principal = { userId: "user-1", organizationId: "org-1" };
  const createdAt = { seconds: BigInt(Math.floor(Date.now() / 1000)), nanos: 0 };
  // A GetApiKey's work without a store: the principal read, an ApiKey answered.
  const identity: RpcService = {
    name: "identity",
    routes: (router) =>
      router.service(IdentityService, {
        getApiKey: async (req, ctx) => {
          const { organizationId, userId } = requirePrincipal(ctx);
          return {
            apiKey: {
              apiKeyId: req.apiKeyId,
              organizationId,
              name: "bench key",
              active: true,
              createdAt,
              createdBy: userId,
              updatedAt: createdAt,
              userId,
            },
          };
        },
      }),
    ready: async () => true,
    close: async () => {},
  };
  const transports: Array<{ name: string; transport: Transport; headers: Record<string, string> }> = [
    {
      name: "in-process (Loom's)",
      transport: inProcessTransport([identity], serviceToken, logger),
      headers: headersFor(principal),
    },
    {
      name: "createRouterTransport (Connect's)",
      transport: createRouterTransport((router) => identity.routes(router), {
        router: { interceptors: serverInterceptors(serviceToken, logger) },
      }),
      // The router transport has no service token of its own: the caller sends it, as over HTTP.
      headers: { ...headersFor(principal), [principalHeaders.serviceToken]: serviceToken },
    },
  ];

  const roundsOf = new Map<string, number[]>(transports.map(({ name }) => [name, []]));
  const timeCalls = async ({ transport, headers }: (typeof transports)[number], calls: number) => {
    const client = createClient(IdentityService, transport);
    const started = performance.now();
    for (let i = 0; i < calls; i++) await client.getApiKey({ apiKeyId: `key-${i}` }, { headers });
    return ((performance.now() - started) * 1000) / calls;
  };
  for (const transport of transports) await timeCalls(transport, Math.min(options.calls, 20_000)); // warm-up: the JIT, and the first calls' setup
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? transports : [...transports].reverse();
    for (const transport of order) roundsOf.get(transport.name)!.push(await timeCalls(transport, options.calls));
  }

  const median = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    );
  const ours = median(roundsOf.get(transports[0]!.name)!);
  printTable(
    `Calls inside one process: ${options.calls} sequential unary GetApiKey-like calls a round, ${options.rounds} rounds, median round`,
    transports.map(({ name }) => {
      const perCall = median(roundsOf.get(name)!);
      return {
        transport: name,
        "µs a call": perCall.toFixed(2),
        "calls/s": Math.round(1_000_000 / perCall),
        rounds: roundsOf
          .get(name)!
          .map((us) => us.toFixed(1))
          .join(" / "),
        "× Loom's": (perCall / ours).toFixed(2),
      };
    }),
  );
}
