import { mcpImage } from "@loom/testing/mcp-server";
import { describe, expect, it } from "vitest";
import { knownArtifact } from "../src/calls/artifacts.ts";
import { artifactOfMcpResult } from "../src/calls/mcp-results.ts";

/** griptape's to_dict keys, in its order. */
const keys = ["type", "id", "reference", "meta", "name", "value"];
const png = mcpImage.png.toString("base64");

describe("MCP results as griptape artifacts", () => {
  const one = (content: object[], more: object = {}) => artifactOfMcpResult({ content, ...more } as never);

  it("gives text as a TextArtifact, and text that is a JSON object or array as a JsonArtifact", () => {
    expect(one([{ type: "text", text: "5" }]).artifact).toMatchObject({ type: "TextArtifact", value: "5" });
    expect(one([{ type: "text", text: ' [1, {"a": 2}] ' }]).artifact).toMatchObject({
      type: "JsonArtifact",
      value: [1, { a: 2 }],
    });
    expect(one([{ type: "text", text: "{not json" }]).artifact).toMatchObject({
      type: "TextArtifact",
      value: "{not json",
    });
    expect(Object.keys(one([{ type: "text", text: "x" }]).artifact)).toEqual(keys);
  });

  it("gives structured content as a JsonArtifact, whatever the content repeats", () => {
    const { artifact, isError } = one([{ type: "text", text: "ignored" }], { structuredContent: { n: 1 } });
    expect(isError).toBe(false);
    expect(artifact).toMatchObject({ type: "JsonArtifact", value: { n: 1 } });
  });

  it("gives an isError result as an ErrorArtifact of its text", () => {
    expect(
      one(
        [
          { type: "text", text: "no" },
          { type: "text", text: "way" },
        ],
        { isError: true },
      ),
    ).toMatchObject({
      isError: true,
      artifact: { type: "ErrorArtifact", value: "no\nway" },
    });
    expect(one([], { isError: true }).artifact.value).toBe("the tool reported an error without a message");
  });

  it("gives an image with its size read from it, and bytes it cannot read as a BlobArtifact", () => {
    const image = one([{ type: "image", data: png, mimeType: "image/png" }]).artifact;
    expect(Object.keys(image)).toEqual([...keys, "format", "width", "height"]);
    expect(image).toMatchObject({ value: png, format: "png", width: 3, height: 2 });
    // Small Buffers share Node's pool: fill it with what would read as a size, so only the image's own bytes count.
    Buffer.from(Buffer.alloc(4000, 0xff).toString("base64"), "base64");
    for (let i = 0; i < 50; i++)
      expect(one([{ type: "image", data: "AAAA", mimeType: "image/png" }]).artifact).toMatchObject({
        type: "BlobArtifact",
        value: "AAAA",
        meta: { mime_type: "image/png" },
      });
  });

  it("gives audio, resources and resource links their artifacts, several items a ListArtifact, none an empty text", () => {
    const { artifact } = one([
      { type: "audio", data: "AAAA", mimeType: "audio/wav" },
      { type: "resource", resource: { uri: "file:///a", text: "inside" } },
      { type: "resource", resource: { uri: "file:///b", blob: "AAAA", mimeType: "application/pdf" } },
      { type: "resource_link", uri: "https://example.com/x", name: "x" },
    ]);
    expect(Object.keys(artifact)).toEqual([...keys, "item_separator", "validate_uniform_types"]);
    expect((artifact.value as { type: string }[]).map((a) => a.type)).toEqual([
      "BlobArtifact",
      "TextArtifact",
      "BlobArtifact",
      "UrlArtifact",
    ]);
    expect(one([]).artifact).toMatchObject({ type: "TextArtifact", value: "" });
  });
});

describe("a griptape tool server's artifact", () => {
  it("is passed on with griptape's keys only, its id and name kept", () => {
    const sent = {
      type: "TextArtifact",
      id: "a1",
      name: "n",
      meta: { k: 1 },
      reference: { x: 1 },
      value: "v",
      extra: 1,
    };
    expect(knownArtifact(sent)).toEqual({
      type: "TextArtifact",
      id: "a1",
      reference: null,
      meta: { k: 1 },
      name: "n",
      value: "v",
    });
  });

  it("keeps a ListArtifact's items, defaulting its own keys; refuses what griptape could not load", () => {
    const list = knownArtifact({ type: "ListArtifact", value: [{ type: "TextArtifact", value: "a" }] });
    expect(list).toMatchObject({ item_separator: "\n\n", validate_uniform_types: false, value: [{ value: "a" }] });
    expect(knownArtifact({ type: "ImageArtifact", value: png, format: "png" })).toBeUndefined();
    expect(knownArtifact({ type: "JsonArtifact", value: "text" })).toBeUndefined();
    expect(knownArtifact({ type: "Unknown", value: 1 })).toBeUndefined();
    expect(knownArtifact({ result: 1 })).toBeUndefined();
  });
});
