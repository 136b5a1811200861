import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { toJsonString } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { newId } from "@loom/contracts/ids";
import { SecretSchema, SecretsService } from "@loom/proto/tools/v1/secrets_pb";
import { headersFor, type Principal } from "@loom/server/principal";
import { type RunningServer, startRpcServer } from "@loom/server/rpc-server";
import { storeBackedService } from "@loom/server/rpc-service";
import { httpTransport } from "@loom/server/transports";
import { createLogger } from "@loom/telemetry/logger";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SecretUnreadable } from "../src/secret-cipher.ts";
import { keyIdOf, secretKeyring } from "../src/secret-keys.ts";
import { resealWithCurrentKey } from "../src/secret-rotation.ts";
import { createSecretsHandlers } from "../src/secrets-service.ts";
import type { ToolsStore } from "../src/store/port.ts";
import { openToolsStore, secretValuesOf } from "../src/wiring.ts";

const serviceToken = "tools-test-token-0123456789";

/** A logger whose JSON lines the test reads. */
function capturedLogger() {
  let text = "";
  const destination = new Writable({ write: (chunk: Buffer, _encoding, done) => ((text += chunk.toString()), done()) });
  return { logger: createLogger("test", "trace", { format: "json", destination }), lines: () => text };
}

/** Secrets through the tools service over HTTP, their values sealed in its store: what a stolen row or key gives. */
describe.each(storeKinds("secrets at rest"))("secrets at rest (%s store)", (kind) => {
  let store: ToolsStore;
  let server: RunningServer;
  let client: Client<typeof SecretsService>;
  const db = freshDatabaseName();
  const keyA = randomBytes(32);
  const alice: Principal = { userId: newId(), organizationId: newId() };
  const mallory: Principal = { userId: newId(), organizationId: newId() };
  const as = (principal: Principal) => ({ headers: headersFor(principal) });
  const log = capturedLogger();

  beforeAll(async () => {
    store = await openToolsStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
    // The SecretsService alone, on the tools store: what the tools service serves beside ToolsService.
    const handlers = createSecretsHandlers({ store, keyring: secretKeyring(keyA) });
    server = await startRpcServer({
      services: [storeBackedService("tools", (router) => router.service(SecretsService, handlers), store)],
      serviceToken,
      logger: log.logger,
    });
    client = createClient(SecretsService, httpTransport(server.url, serviceToken));
  });
  afterAll(async () => {
    await server?.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const create = async (value: string, principal = alice) =>
    (await client.createSecret({ name: "token", value }, as(principal))).secret!;

  it("keeps only AES-256-GCM ciphertext: a fresh nonce per row, the key's id, never the value", async () => {
    const value = `sk-${newId()}`;
    const [a, b] = [await create(value), await create(value)];
    const [rowA, rowB] = [
      await store.getSecret(alice.organizationId, a.secretId),
      await store.getSecret(alice.organizationId, b.secretId),
    ];
    expect(rowA!.sealed.keyId).toBe(keyIdOf(keyA));
    expect(rowA!.sealed.keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(rowA!.sealed.nonce).toHaveLength(12);
    // The value's bytes and a 16-byte tag.
    expect(rowA!.sealed.ciphertext).toHaveLength(Buffer.byteLength(value) + 16);
    expect(Buffer.from(rowA!.sealed.ciphertext).includes(Buffer.from(value))).toBe(false);
    expect(Buffer.from(rowA!.sealed.nonce).equals(Buffer.from(rowB!.sealed.nonce))).toBe(false);
    expect(Buffer.from(rowA!.sealed.ciphertext).equals(Buffer.from(rowB!.sealed.ciphertext))).toBe(false);
    expect(toJsonString(SecretSchema, a)).not.toContain(value);
  });

  it("reveals an organization's values by id and moves their last_used to the time given", async () => {
    const value = `v-${newId()}`;
    const s = await create(value);
    const other = await create("mallory's", mallory);
    expect(s.lastUsed).toEqual(s.createdAt);
    const values = secretValuesOf(store, secretKeyring(keyA));
    const at = new Date(Date.now() + 60_000);
    const revealed = await values.reveal(alice.organizationId, [s.secretId, other.secretId, newId()], at);
    expect([...revealed]).toEqual([[s.secretId, value]]);
    const after = (await client.getSecret({ secretId: s.secretId }, as(alice))).secret!;
    expect(after.lastUsed?.seconds).toBe(BigInt(Math.floor(at.getTime() / 1000)));
    expect(after.updatedAt).toEqual(s.updatedAt);
    // Another organization's secret is neither revealed nor marked.
    expect((await client.getSecret({ secretId: other.secretId }, as(mallory))).secret!.lastUsed).toEqual(
      other.createdAt,
    );
  });

  it("gives the new value after an update, sealed afresh", async () => {
    const s = await create("first");
    const before = await store.getSecret(alice.organizationId, s.secretId);
    await client.updateSecret({ secretId: s.secretId, value: "second" }, as(alice));
    const after = await store.getSecret(alice.organizationId, s.secretId);
    expect(Buffer.from(after!.sealed.nonce).equals(Buffer.from(before!.sealed.nonce))).toBe(false);
    const revealed = await secretValuesOf(store, secretKeyring(keyA)).reveal(
      alice.organizationId,
      [s.secretId],
      new Date(),
    );
    expect(revealed.get(s.secretId)).toBe("second");
  });

  it("does not open a row with another key, nor a row copied to another secret or organization", async () => {
    const s = await create("copied");
    const row = (await store.getSecret(alice.organizationId, s.secretId))!;
    const wrongKey = secretValuesOf(store, secretKeyring(randomBytes(32)));
    await expect(wrongKey.reveal(alice.organizationId, [s.secretId], new Date())).rejects.toThrow(SecretUnreadable);
    // The same key, the same bytes, another key id forged: the tag does not authenticate.
    const forged = secretKeyring(randomBytes(32));
    const withForgedId = { ...forged, byId: new Map([[row.sealed.keyId, forged.current]]) };
    await expect(
      secretValuesOf(store, withForgedId).reveal(alice.organizationId, [s.secretId], new Date()),
    ).rejects.toThrow(/does not decrypt/);
    const values = secretValuesOf(store, secretKeyring(keyA));
    const elsewhere = { ...row, id: newId() };
    await store.insertSecret(elsewhere);
    await expect(values.reveal(alice.organizationId, [elsewhere.id], new Date())).rejects.toThrow(
      /does not decrypt.*altered or belongs to another secret/,
    );
    const inMallorys = { ...row, id: newId(), organizationId: mallory.organizationId };
    await store.insertSecret(inMallorys);
    await expect(values.reveal(mallory.organizationId, [inMallorys.id], new Date())).rejects.toThrow(SecretUnreadable);
    await store.deleteSecret(alice.organizationId, elsewhere.id);
    await store.deleteSecret(mallory.organizationId, inMallorys.id);
  });

  // What wireTools runs at start (the all-in-one's start does it too: apps/loom/test/secrets-key.test.ts).
  it("rotates: a start with a new key reseals every row of the previous one, after which the previous key can go", async () => {
    const made = [await create("one"), await create("two", mallory)];
    const keyB = randomBytes(32);
    const rotation = capturedLogger();
    expect(
      await resealWithCurrentKey({ store, keyring: secretKeyring(keyB, [keyA]), logger: rotation.logger }),
    ).toBeGreaterThanOrEqual(2);
    for (const s of made) {
      const row = await store.getSecret(s.organizationId, s.secretId);
      expect(row!.sealed.keyId).toBe(keyIdOf(keyB));
    }
    expect(await store.countSecretsSealedWithout([keyIdOf(keyB)])).toBe(0);
    expect(rotation.lines()).toContain(`with the current key ${keyIdOf(keyB)}`);
    // Key B alone opens everything now; key A opens nothing.
    const onlyB = secretValuesOf(store, secretKeyring(keyB));
    expect((await onlyB.reveal(alice.organizationId, [made[0]!.secretId], new Date())).get(made[0]!.secretId)).toBe(
      "one",
    );
    expect((await onlyB.reveal(mallory.organizationId, [made[1]!.secretId], new Date())).get(made[1]!.secretId)).toBe(
      "two",
    );
    await expect(
      secretValuesOf(store, secretKeyring(keyA)).reveal(alice.organizationId, [made[0]!.secretId], new Date()),
    ).rejects.toThrow(SecretUnreadable);

    // A start without the key some rows need says so, and drops nothing.
    const keyC = randomBytes(32);
    const lost = capturedLogger();
    expect(await resealWithCurrentKey({ store, keyring: secretKeyring(keyC), logger: lost.logger })).toBe(0);
    expect(lost.lines()).toMatch(/secrets cannot be decrypted with SECRETS_KEY or SECRETS_PREVIOUS_KEYS/);
    expect(await store.countSecretsSealedWithout([keyIdOf(keyB)])).toBe(0);
  });

  it("never writes a value to the logs", async () => {
    expect(log.lines()).not.toContain("sk-");
    expect(log.lines()).not.toContain("copied");
  });
});
