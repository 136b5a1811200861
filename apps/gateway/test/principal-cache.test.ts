import { describe, expect, it } from "vitest";
import { createPrincipalCache } from "../src/principal-cache.ts";

const alice = { userId: "u-alice", organizationId: "o-1" };

describe("the gateway's principal cache", () => {
  it("answers until the time identity allowed, then forgets", () => {
    let now = 1_000;
    const cache = createPrincipalCache({ now: () => now });
    cache.put("secret", alice, "key-1", new Date(2_000));
    expect(cache.get("secret")?.principal).toEqual(alice);
    expect(cache.get("other")).toBeUndefined();
    now = 2_000;
    expect(cache.get("secret")).toBeUndefined();
    expect(cache.size()).toBe(0);
  });

  it("never stores an answer that has already expired", () => {
    const cache = createPrincipalCache({ now: () => 5_000 });
    cache.put("secret", alice, "key-1", new Date(4_000));
    expect(cache.size()).toBe(0);
  });

  it("drops every entry of a revoked key and nothing else", () => {
    const cache = createPrincipalCache({ now: () => 0 });
    cache.put("a", alice, "key-1", new Date(10));
    cache.put("b", alice, "key-2", new Date(10));
    cache.revokeApiKey("key-1");
    expect(cache.get("a")).toBeUndefined();
    expect(cache.get("b")?.principal).toEqual(alice);
  });

  it("holds at most maxEntries, dropping the oldest", () => {
    const cache = createPrincipalCache({ now: () => 0, maxEntries: 2 });
    for (const c of ["a", "b", "c"]) cache.put(c, alice, c, new Date(10));
    expect(cache.size()).toBe(2);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.get("c")?.principal).toEqual(alice);
  });
});
