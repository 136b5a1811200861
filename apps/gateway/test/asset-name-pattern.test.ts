import { assetNameProblem } from "@loom/contracts/asset-names";
import { assetNamePatternSource, charLength } from "@loom/contracts/text";
import { describe, expect, it } from "vitest";

/** Every string of up to `length` characters over `alphabet`. */
function* strings(alphabet: string[], length: number): Generator<string> {
  yield "";
  if (length === 0) return;
  for (const shorter of strings(alphabet, length - 1))
    if (charLength(shorter) === length - 1) for (const c of alphabet) yield shorter + c;
}

describe("the asset name pattern of /openapi.json", () => {
  const pattern = new RegExp(assetNamePatternSource, "u");
  const documented = (name: string) => pattern.test(name) && charLength(name) >= 1 && charLength(name) <= 256;

  it("accepts exactly the names the storage service accepts", () => {
    const alphabet = ["a", ".", "/", "\\", "\n", "é", "\u0085", "😀"];
    let checked = 0;
    for (const name of strings(alphabet, 5)) {
      expect(documented(name), JSON.stringify(name)).toBe(assetNameProblem(name) === undefined);
      checked++;
    }
    expect(checked).toBeGreaterThan(30_000);
    for (const name of [
      "x".repeat(256),
      "x".repeat(257),
      "😀".repeat(256),
      `a/${".".repeat(254)}`,
      "dir/../x",
      "dir/..",
      "../x",
      "a/./b",
      "a//b",
      "a/",
    ]) {
      expect(documented(name), name).toBe(assetNameProblem(name) === undefined);
    }
  });
});
