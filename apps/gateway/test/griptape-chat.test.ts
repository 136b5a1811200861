import { describe, expect, it } from "vitest";
import { chatRequest, chatRequestSchema, messageJson } from "../src/griptape-chat.ts";

/** Every content kind griptape 1.13 serializes, as its `to_dict` writes them. */
const action = {
  type: "ToolAction",
  tag: "call_1",
  name: "Calculator",
  path: "calculate",
  input: { values: { expression: "6*7" } },
};
const artifact = (type: string, value: unknown, extra: object = {}) => ({
  type,
  id: `${type}-id`,
  reference: null,
  meta: { source: "test" },
  name: `${type}-name`,
  value,
  ...extra,
});
const message = {
  type: "Message",
  role: "user",
  content: [
    { type: "TextMessageContent", artifact: artifact("TextArtifact", "hello") },
    {
      type: "ImageMessageContent",
      artifact: artifact("ImageArtifact", Buffer.from([137, 80, 78, 71]).toString("base64"), {
        format: "png",
        width: 2,
        height: 3,
      }),
    },
    { type: "ActionCallMessageContent", artifact: artifact("ActionArtifact", action) },
    { type: "ActionResultMessageContent", artifact: artifact("TextArtifact", "42"), action },
    { type: "ActionResultMessageContent", artifact: artifact("JsonArtifact", { result: [42, null, true] }), action },
  ],
  usage: { type: "Message.Usage", input_tokens: 3, output_tokens: null },
};

describe("griptape chat serialization", () => {
  it("round-trips every content kind through the contract unchanged", () => {
    const request = chatRequest(chatRequestSchema.parse({ messages: [message], tools: [], driver_configuration: {} }));
    expect(messageJson(request.messages[0])).toEqual(message);
  });

  it("refuses an image whose value is not base64 and a content type griptape does not have", () => {
    const bad = {
      ...message,
      content: [
        {
          type: "ImageMessageContent",
          artifact: artifact("ImageArtifact", "not base64!", { format: "png", width: 1, height: 1 }),
        },
        { type: "AudioMessageContent", artifact: artifact("AudioArtifact", "") },
      ],
    };
    const result = chatRequestSchema.safeParse({ messages: [bad], tools: [], driver_configuration: {} });
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((i) => i.path.join("."))).toEqual([
      "messages.0.content.0.artifact.value",
      "messages.0.content.1.type",
    ]);
  });
});
