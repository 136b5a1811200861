import { describe, expect, it } from "vitest";
import { artifactText, boundedText } from "../src/tools/artifact-text.ts";
import { createModelToolNames, modelToolNamePattern } from "../src/tools/model-tool-names.ts";

describe("model tool names", () => {
  it("are <tool>_<activity>; a name taken or too long gets a stable hash in place of its tail", () => {
    const name = createModelToolNames();
    expect(name({ id: "t1", name: "Calc" }, "add")).toBe("Calc_add");
    const twin = name({ id: "t2", name: "Calc" }, "add");
    expect(twin).toMatch(/^Calc_add_[0-9a-f]{8}$/);
    // a_b + c against a + b_c
    expect(name({ id: "t3", name: "a" }, "b_c")).toBe("a_b_c");
    expect(name({ id: "t4", name: "a_b" }, "c")).toMatch(/^a_b_c_[0-9a-f]{8}$/);
    const long = name({ id: "t5", name: "T".repeat(40) }, "a".repeat(40));
    expect(long).toHaveLength(64);
    expect(long.startsWith(`${"T".repeat(40)}_${"a".repeat(14)}_`)).toBe(true);
    for (const n of [twin, long]) expect(n).toMatch(modelToolNamePattern);
    // The same in another run (a fresh namer): the model sees one name for one activity.
    const again = createModelToolNames();
    again({ id: "t1", name: "Calc" }, "add");
    expect(again({ id: "t2", name: "Calc" }, "add")).toBe(twin);
  });
});

describe("a tool result as the model reads it", () => {
  const artifact = (type: string, value: unknown, extra = {}) => ({
    type,
    id: "i",
    reference: null,
    meta: {},
    name: "n",
    value,
    ...extra,
  });

  it("is griptape's to_text of the artifact", () => {
    expect(artifactText(artifact("TextArtifact", "hi"))).toBe("hi");
    expect(artifactText(artifact("ErrorArtifact", "boom"))).toBe("boom");
    expect(artifactText(artifact("JsonArtifact", { a: [1] }))).toBe('{"a":[1]}');
    expect(
      artifactText(
        artifact("ImageArtifact", Buffer.from("12345").toString("base64"), { format: "png", width: 1, height: 1 }),
      ),
    ).toBe("Image, format: png, size: 5 bytes");
    expect(
      artifactText(
        artifact("ListArtifact", [artifact("TextArtifact", "a"), artifact("JsonArtifact", 2)], { item_separator: "|" }),
      ),
    ).toBe("a|2");
  });

  it("is cut past the bound, with a note the model reads", () => {
    expect(boundedText("abc", 3)).toBe("abc");
    expect(boundedText("abcdef", 3)).toBe("abc\n[Loom: this result was cut to its first 3 of 6 characters]");
  });
});
