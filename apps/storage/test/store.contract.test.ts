import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AssetRecord, BucketRecord, StorageStore } from "../src/store/port.ts";
import { openStorageStore } from "../src/wiring.ts";

describe.each(storeKinds("storage store contract"))("storage store contract (%s)", (kind) => {
  let store: StorageStore;
  const db = freshDatabaseName();
  const org = newId();
  const otherOrg = newId();
  let clock = Date.parse("2026-03-04T05:06:07.000Z");
  const tick = () => new Date((clock += 1000));

  beforeAll(async () => {
    store = await openStorageStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
    await store.init(); // idempotent
  });
  afterAll(async () => {
    await store.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const newBucket = async (over: Partial<BucketRecord> = {}): Promise<BucketRecord> => {
    const at = tick();
    const bucket = {
      id: newId(),
      organizationId: org,
      name: "b",
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      ...over,
    };
    await store.insertBucket(bucket);
    return bucket;
  };
  const asset = (bucket: BucketRecord, name: string, over: Partial<AssetRecord> = {}): AssetRecord => {
    const at = tick();
    return {
      id: newId(),
      organizationId: bucket.organizationId,
      bucketId: bucket.id,
      name,
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      ...over,
    };
  };

  it("round-trips a bucket only within its organization, renames it, lists newest first", async () => {
    const first = await newBucket({ name: "first" });
    const second = await newBucket({ name: "second" });
    expect(await store.getBucket(org, first.id)).toEqual(first);
    expect(await store.getBucket(otherOrg, first.id)).toBeUndefined();
    const at = tick();
    expect(await store.renameBucket(otherOrg, first.id, "hijacked", at)).toBeUndefined();
    expect(await store.renameBucket(org, first.id, "renamed", at)).toEqual({
      ...first,
      name: "renamed",
      updatedAt: at,
    });
    const page = await store.listBuckets(org, 0, 100);
    expect(page.items.slice(0, 2).map((b) => b.id)).toEqual([second.id, first.id]);
    expect((await store.listBuckets(otherOrg, 0, 10)).totalCount).toBe(0);
  });

  it("a bucket marked for deletion is gone for every read at once, and the sweep finds it", async () => {
    const bucket = await newBucket();
    await store.upsertAsset(asset(bucket, "x"));
    const before = (await store.listBuckets(org, 0, 100)).totalCount;
    expect(await store.markBucketDeleting(otherOrg, bucket.id, tick())).toBe(false);
    const marked = tick();
    expect(await store.markBucketDeleting(org, bucket.id, marked)).toBe(true);
    expect(await store.markBucketDeleting(org, bucket.id, tick())).toBe(false);
    expect(await store.getBucket(org, bucket.id)).toBeUndefined();
    expect(await store.renameBucket(org, bucket.id, "n", tick())).toBeUndefined();
    expect((await store.listBuckets(org, 0, 100)).totalCount).toBe(before - 1);
    expect((await store.bucketsToSweep(marked, 10)).map((b) => b.id)).not.toContain(bucket.id);
    expect((await store.bucketsToSweep(new Date(marked.getTime() + 1), 10)).map((b) => b.id)).toContain(bucket.id);
    await store.deleteAssetsOfBucket(bucket.id);
    await store.forgetBucket(bucket.id);
    expect((await store.bucketsToSweep(new Date(clock + 1e6), 100)).map((b) => b.id)).not.toContain(bucket.id);
    expect(await store.getAsset(org, bucket.id, "x")).toBeUndefined();
  });

  it("upserts an asset: a second create of the name returns the first, unchanged", async () => {
    const bucket = await newBucket();
    const first = asset(bucket, "dir/file.txt");
    expect(await store.upsertAsset(first)).toEqual({ asset: first, created: true });
    const again = await store.upsertAsset(asset(bucket, "dir/file.txt"));
    expect(again).toEqual({ asset: first, created: false });
    expect(await store.getAsset(org, bucket.id, "dir/file.txt")).toEqual(first);
    expect(await store.getAsset(otherOrg, bucket.id, "dir/file.txt")).toBeUndefined();
    expect(await store.getAssetById(org, bucket.id, first.id)).toEqual(first);
    expect(await store.getAssetById(otherOrg, bucket.id, first.id)).toBeUndefined();
    // Same name in another bucket is another asset.
    const elsewhere = await newBucket();
    expect((await store.upsertAsset(asset(elsewhere, "dir/file.txt"))).created).toBe(true);
  });

  it("concurrent creates of one name store one asset", async () => {
    const bucket = await newBucket();
    const answers = await Promise.all(Array.from({ length: 10 }, () => store.upsertAsset(asset(bucket, "race"))));
    expect(answers.filter((a) => a.created)).toHaveLength(1);
    expect(new Set(answers.map((a) => a.asset.id)).size).toBe(1);
  });

  it("lists assets newest first, paged, filtered by prefix and postfix taken literally", async () => {
    const bucket = await newBucket();
    const names = ["a/one.txt", "a/two.md", "b/three.txt", "a.b/x.txt", "(a)*/y.txt"];
    for (const name of names) await store.upsertAsset(asset(bucket, name));
    const all = await store.listAssets(org, bucket.id, { prefix: "", postfix: "" }, 0, 100);
    expect(all.items.map((a) => a.name)).toEqual([...names].reverse());
    const paged = await store.listAssets(org, bucket.id, { prefix: "", postfix: "" }, 1, 2);
    expect(paged).toMatchObject({ totalCount: 5 });
    expect(paged.items.map((a) => a.name)).toEqual(["a.b/x.txt", "b/three.txt"]);
    const names_ = async (prefix: string, postfix: string) =>
      (await store.listAssets(org, bucket.id, { prefix, postfix }, 0, 100)).items.map((a) => a.name).sort();
    expect(await names_("a/", "")).toEqual(["a/one.txt", "a/two.md"]);
    expect(await names_("", ".txt")).toEqual(["(a)*/y.txt", "a.b/x.txt", "a/one.txt", "b/three.txt"]);
    expect(await names_("a", ".txt")).toEqual(["a.b/x.txt", "a/one.txt"]);
    expect(await names_("a.", "")).toEqual(["a.b/x.txt"]); // "." is not "any character"
    expect(await names_("(a)*", "")).toEqual(["(a)*/y.txt"]);
    expect((await store.listAssets(otherOrg, bucket.id, { prefix: "", postfix: "" }, 0, 100)).totalCount).toBe(0);
  });

  it("filters names exactly: no wildcards, case kept, characters beyond the BMP counted as one", async () => {
    const bucket = await newBucket();
    for (const name of ["a%b", "axb", "A%b", "a_c", "aZc", "ü\u{10FFFF}", "ü/x", "üx", "v"])
      await store.upsertAsset(asset(bucket, name));
    const names_ = async (prefix: string, postfix: string) =>
      (await store.listAssets(org, bucket.id, { prefix, postfix }, 0, 100)).items.map((a) => a.name).sort();
    expect(await names_("a%", "")).toEqual(["a%b"]);
    expect(await names_("a_", "")).toEqual(["a_c"]);
    expect(await names_("a", "")).toEqual(["a%b", "aZc", "a_c", "axb"]);
    expect(await names_("ü", "")).toEqual(["ü/x", "üx", "ü\u{10FFFF}"]);
    expect(await names_("", "%b")).toEqual(["A%b", "a%b"]);
    expect(await names_("", "B")).toEqual([]);
    expect(await names_("", "\u{10FFFF}")).toEqual(["ü\u{10FFFF}"]);
    expect(await names_("\u{10FFFF}", "")).toEqual([]);
  });

  it("records uploads on the asset itself (not a later one of the same name), with the presigned-PUT window", async () => {
    const bucket = await newBucket();
    const first = asset(bucket, "f");
    await store.upsertAsset(first);
    const blob = { size: 5, contentType: "text/plain", etag: '"e1"' };
    const at = tick();
    const until = new Date(clock + 60_000);
    expect(await store.setAssetBlob(otherOrg, bucket.id, first.id, blob, at)).toBeUndefined();
    expect(await store.setAssetBlob(org, bucket.id, first.id, blob, at, until)).toEqual({
      ...first,
      blob,
      updatedAt: at,
      presignedPutUntil: until,
    });
    await store.notePresignedPut(org, bucket.id, first.id, new Date(until.getTime() - 1000)); // earlier: kept as it is
    expect((await store.getAsset(org, bucket.id, "f"))!.presignedPutUntil).toEqual(until);
    const later = new Date(until.getTime() + 1000);
    await store.notePresignedPut(org, bucket.id, first.id, later);
    expect((await store.getAsset(org, bucket.id, "f"))!.presignedPutUntil).toEqual(later);
    const cleared = await store.setAssetBlob(org, bucket.id, first.id, { ...blob, etag: '"e2"' }, tick());
    expect(cleared!.presignedPutUntil).toBeUndefined();
    expect((await store.getAsset(org, bucket.id, "f"))!.presignedPutUntil).toBeUndefined();

    expect(await store.deleteAsset(otherOrg, bucket.id, "f")).toBeUndefined();
    expect((await store.deleteAsset(org, bucket.id, "f"))!.id).toBe(first.id);
    expect(await store.deleteAsset(org, bucket.id, "f")).toBeUndefined();
    const recreated = asset(bucket, "f");
    await store.upsertAsset(recreated);
    expect(await store.setAssetBlob(org, bucket.id, first.id, blob, tick())).toBeUndefined(); // the old asset's upload lands nowhere
    expect((await store.getAsset(org, bucket.id, "f"))!.blob).toBeUndefined();
  });

  it("counts the organization's stored bytes", async () => {
    const owner = newId();
    const bucket = await newBucket({ organizationId: owner });
    expect(await store.storedBytes(owner)).toBe(0);
    const one = asset(bucket, "one");
    const two = asset(bucket, "two");
    await store.upsertAsset(one);
    await store.upsertAsset(two);
    await store.upsertAsset(asset(bucket, "empty"));
    await store.setAssetBlob(owner, bucket.id, one.id, { size: 100, contentType: "x/y", etag: '"1"' }, tick());
    await store.setAssetBlob(owner, bucket.id, two.id, { size: 23, contentType: "x/y", etag: '"2"' }, tick());
    expect(await store.storedBytes(owner)).toBe(123);
    expect(await store.storedBytes(newId())).toBe(0);
  });
});
