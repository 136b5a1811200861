import { newId } from "@loom/contracts/ids";
import { KnowledgeBasesService } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import { headersFor } from "@loom/server/principal";
import type { RpcService } from "@loom/server/rpc-service";
import { clientFor, inProcessTransport } from "@loom/server/transports";
import { createLogger } from "@loom/telemetry/logger";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openChunkIndex } from "../src/index/open.ts";
import { openKnowledgeStore, wireKnowledge } from "../src/wiring.ts";

const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

/** ResolveKnowledgeBases, as the assistants and runs services call it (docs/decisions.md, "Knowledge bases"). */
describe.each(storeKinds("ResolveKnowledgeBases"))("ResolveKnowledgeBases (%s store)", (kind) => {
  const db = freshDatabaseName();
  let service: RpcService;
  let knowledgeBases: ReturnType<typeof clientFor<typeof KnowledgeBasesService>>;
  const call = { headers: headersFor({ userId: newId(), organizationId: newId() }) };
  const strangerCall = { headers: headersFor({ userId: newId(), organizationId: newId() }) };

  beforeAll(async () => {
    // No asset paths here: the storage service (none behind this transport) is never asked.
    service = await wireKnowledge(
      await openKnowledgeStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db }),
      await openChunkIndex({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db }),
      {},
      { storage: inProcessTransport([], "test-token", logger) },
    );
    knowledgeBases = clientFor(KnowledgeBasesService, inProcessTransport([service], "test-token", logger));
  });
  afterAll(async () => {
    await service?.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const knowledgeBase = async (name: string, on = call) =>
    (await knowledgeBases.createKnowledgeBase({ name }, on)).knowledgeBase!.knowledgeBaseId;

  it("answers the organization's knowledge bases in the order asked, and the other ids as missing, as asked", async () => {
    const [a, b] = [await knowledgeBase("a"), await knowledgeBase("b")];
    const theirs = await knowledgeBase("theirs", strangerCall);
    const unknown = newId();
    const res = await knowledgeBases.resolveKnowledgeBases(
      { knowledgeBaseIds: [b, unknown, a.toUpperCase(), theirs, "not-an-id"] },
      call,
    );
    expect(res.knowledgeBases.map((kb) => [kb.knowledgeBaseId, kb.name])).toEqual([
      [b, "b"],
      [a, "a"],
    ]);
    expect(res.missingIds).toEqual([unknown, theirs, "not-an-id"]);
  });

  it("an empty list is an empty answer", async () => {
    const res = await knowledgeBases.resolveKnowledgeBases({ knowledgeBaseIds: [] }, call);
    expect(res.knowledgeBases).toEqual([]);
    expect(res.missingIds).toEqual([]);
  });
});
