import { describe, expect, it } from "vitest";
import { plainCopy } from "../src/plain-copy.ts";

describe("plainCopy", () => {
  it("copies plain data deeply: changing the copy leaves the original as it was", () => {
    const original = {
      id: "k1",
      count: 3n,
      optional: undefined,
      createdAt: new Date("2026-01-02T03:04:05.678Z"),
      tags: ["a", { nested: [1, 2] }],
      bytes: new Uint8Array([1, 2, 3]),
      bare: Object.assign(Object.create(null), { x: 1 }),
    };
    const copy = plainCopy(original);
    expect(copy).toEqual(original);
    expect("optional" in copy).toBe(true);

    copy.createdAt.setFullYear(1999);
    (copy.tags[1] as { nested: number[] }).nested.push(3);
    copy.bytes[0] = 9;
    copy.bare.x = 2;
    expect(original.createdAt.toISOString()).toBe("2026-01-02T03:04:05.678Z");
    expect(original.tags[1]).toEqual({ nested: [1, 2] });
    expect(original.bytes[0]).toBe(1);
    expect(original.bare.x).toBe(1);
  });

  it("copies bytes out of a Buffer instead of sharing its memory", () => {
    const buffer = Buffer.from("abc");
    const copy = plainCopy({ buffer }).buffer;
    copy[0] = 0;
    expect(buffer.toString()).toBe("abc");
  });

  it("falls back to structuredClone for anything that is not plain data", () => {
    const original = { seen: new Map([["a", new Date(0)]]) };
    const copy = plainCopy(original);
    expect(copy.seen).not.toBe(original.seen);
    expect(copy.seen.get("a")).toEqual(new Date(0));
  });
});
