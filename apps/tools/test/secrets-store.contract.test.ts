import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SealedValue } from "../src/secret-cipher.ts";
import type { ToolsStore } from "../src/store/port.ts";
import type { SecretRecord } from "../src/store/secrets.ts";
import { openToolsStore } from "../src/wiring.ts";

/** Bytes that stand for a sealed value: the store keeps them as they are, it never opens them. */
const sealed = (keyId = "k1"): SealedValue => ({
  keyId,
  nonce: crypto.getRandomValues(new Uint8Array(12)),
  ciphertext: crypto.getRandomValues(new Uint8Array(40)),
});

describe.each(storeKinds("tools store contract, secrets"))("tools store contract, secrets (%s)", (kind) => {
  let store: ToolsStore;
  const db = freshDatabaseName();
  const org = newId();
  const otherOrg = newId();

  beforeAll(async () => {
    store = await openToolsStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
    await store.init();
  });
  afterAll(async () => {
    await store.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const secret = (over: Partial<SecretRecord> = {}): SecretRecord => {
    const at = new Date("2026-03-04T05:06:07.089Z");
    return {
      id: newId(),
      organizationId: org,
      name: "s",
      sealed: sealed(),
      createdAt: at,
      updatedAt: at,
      lastUsed: at,
      ...over,
    };
  };

  it("round-trips a secret, its sealed bytes exactly, only within its organization", async () => {
    const s = secret();
    await store.insertSecret(s);
    expect(await store.getSecret(org, s.id)).toEqual(s);
    expect(await store.getSecret(otherOrg, s.id)).toBeUndefined();
    expect(await store.getSecrets(org, [s.id, newId(), s.id])).toEqual([s]);
    expect(await store.getSecrets(otherOrg, [s.id])).toEqual([]);
    expect(await store.getSecrets(org, [])).toEqual([]);
  });

  it("updates only the given fields, only within its organization", async () => {
    const s = secret({ name: "before" });
    await store.insertSecret(s);
    const at = new Date(s.createdAt.getTime() + 5000);
    expect(await store.updateSecret(otherOrg, s.id, { name: "hijacked" }, at)).toBeUndefined();
    const renamed = await store.updateSecret(org, s.id, { name: "after" }, at);
    expect(renamed).toEqual({ ...s, name: "after", updatedAt: at });
    const resealed = sealed("k2");
    expect(await store.updateSecret(org, s.id, { sealed: resealed }, at)).toEqual({
      ...renamed,
      sealed: resealed,
    });
    expect(await store.updateSecret(org, newId(), { name: "x" }, at)).toBeUndefined();
  });

  it("moves last_used forward only, only within its organization", async () => {
    const s = secret();
    await store.insertSecret(s);
    const later = new Date(s.createdAt.getTime() + 60_000);
    await store.markSecretsUsed(otherOrg, [s.id], later);
    expect((await store.getSecret(org, s.id))?.lastUsed).toEqual(s.lastUsed);
    await store.markSecretsUsed(org, [s.id, newId()], later);
    expect(await store.getSecret(org, s.id)).toEqual({ ...s, lastUsed: later });
    await store.markSecretsUsed(org, [s.id], s.createdAt);
    expect((await store.getSecret(org, s.id))?.lastUsed).toEqual(later);
  });

  it("deletes only within its organization", async () => {
    const s = secret();
    await store.insertSecret(s);
    expect(await store.deleteSecret(otherOrg, s.id)).toBe(false);
    expect(await store.deleteSecret(org, s.id)).toBe(true);
    expect(await store.deleteSecret(org, s.id)).toBe(false);
    expect(await store.getSecret(org, s.id)).toBeUndefined();
  });

  it("lists an organization's secrets newest first, ties by id, with a total", async () => {
    const listOrg = newId();
    const same = new Date("2026-06-01T00:00:01.000Z");
    const made = [
      secret({ organizationId: listOrg, createdAt: new Date("2026-06-01T00:00:00.000Z") }),
      secret({ organizationId: listOrg, createdAt: same }),
      secret({ organizationId: listOrg, createdAt: same }),
    ];
    for (const s of made) await store.insertSecret(s);
    const expected = [made[1]!, made[2]!].sort((a, b) => (a.id < b.id ? 1 : -1)).concat(made[0]!);
    const first = await store.listSecrets(listOrg, 0, 2);
    const second = await store.listSecrets(listOrg, 2, 2);
    expect(first.totalCount).toBe(3);
    expect([...first.items, ...second.items]).toEqual(expected);
    expect((await store.listSecrets(newId(), 0, 10)).totalCount).toBe(0);
  });

  it("finds the rows of given keys in id order across organizations, and reseals one only if it is unchanged", async () => {
    const oldKey = `old-${newId().slice(0, 8)}`;
    const rows = [secret({ sealed: sealed(oldKey) }), secret({ organizationId: otherOrg, sealed: sealed(oldKey) })];
    for (const s of rows) await store.insertSecret(s);
    rows.sort((a, b) => (a.id < b.id ? -1 : 1));
    expect(await store.secretsSealedWith([oldKey], "", 10)).toEqual(rows);
    expect(await store.secretsSealedWith([oldKey], rows[0]!.id, 10)).toEqual([rows[1]]);
    expect(await store.secretsSealedWith([oldKey], "", 1)).toEqual([rows[0]]);
    expect(await store.countSecretsSealedWithout(["k1", "k2"])).toBe(2);

    const [a, b] = rows as [SecretRecord, SecretRecord];
    const fresh = sealed("k1");
    expect(await store.resealSecret(a.organizationId, a.id, a.sealed, fresh)).toBe(true);
    expect(await store.getSecret(a.organizationId, a.id)).toEqual({ ...a, sealed: fresh });
    // Changed since it was read (an update sealed it again): left as it is.
    expect(await store.resealSecret(a.organizationId, a.id, a.sealed, sealed("k1"))).toBe(false);
    const stranger = b.organizationId === org ? otherOrg : org;
    expect(await store.resealSecret(stranger, b.id, b.sealed, fresh)).toBe(false);
    expect(await store.secretsSealedWith([oldKey], "", 10)).toEqual([b]);
    expect(await store.countSecretsSealedWithout(["k1", "k2", oldKey])).toBe(0);
  });
});
