import { randomBytes } from "node:crypto";
import { startSplitStack } from "@loom/test-stacks/split-stack";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { dropDatabase, freshDatabaseName } from "@loom/testing/servers";
import { type LoadResult, load, printTable } from "./load.ts";

/** The id of the bootstrap key the client authenticates with: its organization's only key. */
export async function bootstrapKeyId(client: ApiClient): Promise<string> {
  const users = await client.get("/users");
  if (users.status !== 200) throw new Error(`ListUsers answered ${users.status}: ${JSON.stringify(users.body)}`);
  const orgId = users.body.users[0].organizations[0];
  return (await client.get(`/organizations/${orgId}/api-keys`)).body.api_keys[0].api_key_id;
}

/**
 * GetApiKey through the full stack (gateway → identity over Connect, each in
 * its own process; and the all-in-one process) against a bare Koa handler
 * answering the same JSON, in one run. Goals: the all-in-one at ≥ 30% of
 * the bare handler's throughput (issue 2); the split deployment with its
 * principal cached through NATS at ≥ 10% (issue 37).
 */
export async function benchGetApiKey(options: {
  seconds: number;
  connections: number;
  mongoUrl?: string;
  natsUrl?: string;
}): Promise<void> {
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  // Printed in this order: the bare handler's rows, the floors, the full path.
  const bareRows: LoadResult[] = [];
  const floors: LoadResult[] = [];
  const results: LoadResult[] = [];
  const db = freshDatabaseName("loom_bench");

  // Without MongoDB, the split identity process keeps an in-memory SQLite database; the all-in-one its data directory's file.
  const store = options.mongoUrl ? "MongoDB" : "SQLite";
  const auth = { authorization: `Bearer ${key}` };
  let sample: { status: number; body: unknown } | undefined;
  let keyId = "";

  // Split: identity and gateway as separate processes, as in production;
  // without a bus (every request authenticates) and, given NATS, with one.
  for (const natsUrl of [undefined, ...(options.natsUrl ? [options.natsUrl] : [])]) {
    const shared: Record<string, string> = natsUrl ? { NATS_URL: natsUrl } : {};
    const identityEnv: Record<string, string> = { BOOTSTRAP_API_KEY: key };
    if (options.mongoUrl) Object.assign(identityEnv, { MONGODB_URL: options.mongoUrl, MONGODB_DB: db });
    const stack = await startSplitStack(shared, { identity: identityEnv });
    const client = apiClient(stack.gatewayUrl, key);
    keyId = await bootstrapKeyId(client);
    sample = await client.get(`/api-keys/${keyId}`);
    if (sample.status !== 200) throw new Error(`GetApiKey answered ${sample.status}`);
    const mode = natsUrl ? "NATS bus: principal cached" : "no bus: Authenticate per request";
    results.push(
      await load(
        `GetApiKey: gateway + identity processes (${store}; ${mode})`,
        `${stack.gatewayUrl}/api-keys/${keyId}`,
        auth,
        options.seconds,
        options.connections,
      ),
    );
    await stack.stop();
  }

  // Baseline: a bare Koa handler with the same body. Reference: the same
  // handler on Loom's HTTP server (responses batched per event-loop turn), to
  // tell what the server is worth from what the rest is.
  const body = JSON.stringify(sample!.body);
  for (const [turnBatched, name] of [
    ["0", "bare Koa handler (baseline)"],
    ["1", "reference: bare Koa handler on Loom's HTTP server (turn-batched)"],
  ] as const) {
    const barePort = await freePort();
    const bare = await startProcess(
      "bench/bare-koa.ts",
      { PORT: String(barePort), BODY: body, TURN_BATCHED: turnBatched },
      `http://127.0.0.1:${barePort}/healthz`,
    );
    bareRows.push(
      await load(name, `http://127.0.0.1:${barePort}/api-keys/${keyId}`, auth, options.seconds, options.connections),
    );
    await stopProcess(bare);
  }

  // Floors: Koa plus one hop to a process that does nothing, by plain HTTP and by Connect (Loom's hop, and
  // connect-node's client and adapter for reference). Goal (issue 37): Loom's Connect hop ≥ 50% of the plain one.
  if (!options.mongoUrl) {
    for (const [floor, name, hop] of [
      ["connect", "floor: Koa + 1 Connect call (Loom's transport and handler)", "loom"],
      ["connect", "reference: Koa + 1 Connect call (connect-node's client and adapter)", "connect-node"],
      ["http", "floor: Koa + 1 plain HTTP call", "loom"],
    ] as const) {
      const upstreamPort = await freePort();
      const upstream = await startProcess(
        "bench/rpc-floor.ts",
        { FLOOR: "upstream", HOP: hop, PORT: String(upstreamPort), BODY: body },
        `http://127.0.0.1:${upstreamPort}/healthz`,
      );
      const floorPort = await freePort();
      const proc = await startProcess(
        "bench/rpc-floor.ts",
        { FLOOR: floor, HOP: hop, PORT: String(floorPort), UPSTREAM_PORT: String(upstreamPort), BODY: body },
        `http://127.0.0.1:${floorPort}/healthz`,
      );
      floors.push(await load(name, `http://127.0.0.1:${floorPort}/`, auth, options.seconds, options.connections));
      await stopProcess(proc);
      await stopProcess(upstream);
    }
  }

  // Embedded: the all-in-one process (in-process transport).
  const loomPort = await freePort();
  const loomEnv: Record<string, string> = { PORT: String(loomPort), BOOTSTRAP_API_KEY: key };
  if (options.mongoUrl) Object.assign(loomEnv, { MONGODB_URL: options.mongoUrl, MONGODB_DB_PREFIX: `${db}_` });
  const loom = await startProcess("apps/loom/src/main.ts", loomEnv, `http://127.0.0.1:${loomPort}/healthz`);
  const loomKeyId = await bootstrapKeyId(apiClient(`http://127.0.0.1:${loomPort}`, key));
  results.push(
    await load(
      `GetApiKey: all-in-one process (${store}; in-process bus: principal cached)`,
      `http://127.0.0.1:${loomPort}/api-keys/${loomKeyId}`,
      auth,
      options.seconds,
      options.connections,
    ),
  );
  await stopProcess(loom);
  if (options.mongoUrl) {
    await dropDatabase(options.mongoUrl, db);
    await dropDatabase(options.mongoUrl, `${db}_identity`);
  }

  const [baseline, reference] = bareRows.map((r) => r.requestsPerSecond) as [number, number];
  const rows = [...bareRows, ...floors, ...results];
  printTable(
    `GetApiKey vs. bare Koa — ${options.connections} connections, ${options.seconds} s each (goals: all-in-one ≥ 30%, split with NATS ≥ 10% of baseline)`,
    rows.map((r) => ({
      target: r.name,
      "req/s": Math.round(r.requestsPerSecond),
      "p50 ms": r.p50,
      "p99 ms": r.p99,
      "vs baseline": `${((100 * r.requestsPerSecond) / baseline).toFixed(1)}%`,
      "vs reference": `${((100 * r.requestsPerSecond) / reference).toFixed(1)}%`,
      "non-2xx": r.non2xx,
      errors: r.errors,
    })),
  );
  const hop = (name: string) => floors.find((r) => r.name.startsWith(name))?.requestsPerSecond;
  const loomHop = hop("floor: Koa + 1 Connect call");
  const plainHop = hop("floor: Koa + 1 plain HTTP call");
  if (loomHop && plainHop)
    console.log(`Loom's Connect hop / plain HTTP hop: ${((100 * loomHop) / plainHop).toFixed(1)}% (goal ≥ 50%)`);
  const failed = rows.filter((r) => r.non2xx > 0 || r.errors > 0);
  if (failed.length > 0) throw new Error(`requests failed in: ${failed.map((r) => r.name).join(", ")}`);
}
