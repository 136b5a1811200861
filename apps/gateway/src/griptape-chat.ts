import type { JsonObject } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { jsonToValue, valueToJson } from "@loom/contracts/json-value";
import {
  type Artifact,
  ArtifactSchema,
  type ChatMessage,
  type CreateChatMessageRequest,
  ImageSchema,
  type MessageContent,
  MessageContentSchema,
  type StreamChatMessageResponse,
  type ToolAction,
  ToolActionSchema,
  type Usage,
} from "@loom/proto/runs/v1/chat_pb";
import { z } from "zod";
import { jsonObject, jsonValue } from "./validation.ts";

/**
 * griptape's serialization of prompt-stack messages (griptape 1.13,
 * griptape/common/prompt_stack and griptape/artifacts): what
 * GriptapeCloudPromptDriver sends, and what its `Message.from_dict` and
 * `DeltaMessage.from_dict` rebuild. Every artifact carries `type`, `id`,
 * `reference`, `meta`, `name`, `value` (ImageArtifact also `format`, `width`,
 * `height`, its value base64); a ToolAction `type`, `tag`, `name`, `path`,
 * `input`. Optional fields accept null, as griptape writes None.
 */
const int32Max = 2 ** 31 - 1;
const optional = <T extends z.ZodType>(schema: T) => schema.nullish().transform((value) => value ?? undefined);

const toolActionSchema = z.object({
  type: z.literal("ToolAction").optional(),
  tag: z.string(),
  name: z.string(),
  path: optional(z.string()),
  input: optional(jsonObject),
});

const artifactBase = {
  id: z.string(),
  name: z.string(),
  reference: optional(z.string()),
  meta: optional(jsonObject),
};
const textArtifactSchema = z.object({ ...artifactBase, type: z.string(), value: z.string() });
const imageArtifactSchema = z.object({
  ...artifactBase,
  type: z.literal("ImageArtifact"),
  value: z.base64("must be base64"),
  format: z.string(),
  width: z.number().int().min(0).max(int32Max),
  height: z.number().int().min(0).max(int32Max),
});
const actionArtifactSchema = z.object({ ...artifactBase, type: z.literal("ActionArtifact"), value: toolActionSchema });
/** A tool's result: any artifact; a string value is text, anything else JSON. */
const anyArtifactSchema = z.object({ ...artifactBase, type: z.string(), value: jsonValue });

const contentSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("TextMessageContent"), artifact: textArtifactSchema }),
  z.object({ type: z.literal("ImageMessageContent"), artifact: imageArtifactSchema }),
  z.object({ type: z.literal("ActionCallMessageContent"), artifact: actionArtifactSchema }),
  z.object({ type: z.literal("ActionResultMessageContent"), artifact: anyArtifactSchema, action: toolActionSchema }),
]);

/** What a message's `usage` fields are, asked and answered alike. */
const usageFields = {
  usage: { description: "The tokens the message took" },
  type: { description: "griptape's class name, Message.Usage" },
  input_tokens: { description: "Tokens of the prompt; null when unknown" },
  output_tokens: { description: "Tokens of the answer; null when unknown" },
} as const;

const usageSchema = z
  .object({
    type: z.string().optional().meta(usageFields.type),
    input_tokens: optional(z.number()).meta(usageFields.input_tokens),
    output_tokens: optional(z.number()).meta(usageFields.output_tokens),
  })
  .meta(usageFields.usage);

export const chatRoles = ["user", "assistant", "system"] as const;

const messageSchema = z.object({
  type: z.literal("Message").optional().meta({ description: "griptape's class name, Message" }),
  role: z.enum(chatRoles).meta({ description: "Who says it: user, assistant or system" }),
  content: z.array(contentSchema).meta({
    description:
      "What it says: text, images, the model's tool calls and their results, each with its griptape artifact",
  }),
  usage: usageSchema,
});

const toolSchema = z.object({
  name: z.string().min(1).meta({ description: "The tool's name, as the model calls it" }),
  activities: z
    .array(
      z.object({
        name: z.string().min(1).meta({ description: "The activity's name" }),
        description: z.string().meta({ description: "What it does, as the model reads it" }),
        json_schema: jsonObject.meta({ description: "The JSON schema of its input" }),
      }),
    )
    .meta({ description: "What the model may call it to do" }),
});

const driverConfigurationSchema = z.object({
  model: optional(z.string()).meta({
    description:
      "The model to answer with: one the deployment serves (DEFAULT_MODEL and CHAT_MODELS, e.g. `openai:gpt-4.1-mini`). Absent, null or empty: DEFAULT_MODEL. Another name is 400, listing the allowed ones.",
  }),
  max_tokens: optional(z.number().int().min(1).max(int32Max)).meta({
    description: "The most tokens the answer may take",
  }),
  temperature: optional(z.number()).meta({ description: "Sampling temperature: higher is more varied" }),
  use_native_tools: optional(z.boolean()).meta({
    description: "Whether tools are called through the model's own tool calls (default true)",
  }),
  structured_output_strategy: optional(z.enum(["native", "tool", "rule"])).meta({
    description:
      "How `output_schema` is made to hold: the model's native structured output (the default), a tool, or a rule",
  }),
  extra_params: optional(jsonObject).meta({
    description: "More call settings, of an allowed few (an unknown key is 400, naming the allowed ones)",
  }),
});

/**
 * The request body (docs/api.md §4, Chat messages). `output_schema` may be
 * absent or null: griptape's driver leaves it out when there is none, and the
 * body reader treats a top-level null as absent (docs/decisions.md); the
 * other three are required. The configuration's fields may be null.
 */
export const chatRequestSchema = z.object({
  driver_configuration: driverConfigurationSchema.meta({ description: "Which model answers, and how" }),
  messages: z
    .array(messageSchema)
    .min(1, "must hold at least one message")
    .meta({ description: "The conversation so far, oldest first (a system message first, if any)" }),
  output_schema: optional(jsonObject).meta({
    description: "A JSON schema the answer must follow; absent or null: free text",
  }),
  tools: z.array(toolSchema).meta({ description: "The tools the model may call; `[]` for none" }),
});

export type ChatRequestBody = z.output<typeof chatRequestSchema>;

export function chatRequest(body: ChatRequestBody): Omit<CreateChatMessageRequest, "$typeName"> {
  const config = body.driver_configuration;
  return {
    driverConfiguration: {
      $typeName: "loom.runs.v1.DriverConfiguration",
      model: config.model,
      maxTokens: config.max_tokens,
      temperature: config.temperature,
      useNativeTools: config.use_native_tools,
      structuredOutputStrategy: config.structured_output_strategy,
      extraParams: config.extra_params as JsonObject | undefined,
    },
    messages: body.messages.map(
      (m): ChatMessage => ({
        $typeName: "loom.runs.v1.ChatMessage",
        role: m.role,
        content: m.content.map(contentIn),
        usage: {
          $typeName: "loom.runs.v1.Usage",
          inputTokens: m.usage.input_tokens,
          outputTokens: m.usage.output_tokens,
        },
      }),
    ),
    outputSchema: (body.output_schema ?? undefined) as JsonObject | undefined,
    tools: body.tools.map((t) => ({
      $typeName: "loom.runs.v1.Tool",
      name: t.name,
      activities: t.activities.map((a) => ({
        $typeName: "loom.runs.v1.ToolActivity",
        name: a.name,
        description: a.description,
        jsonSchema: a.json_schema as JsonObject,
      })),
    })),
  };
}

type ContentJson = z.output<typeof contentSchema>;
type ArtifactJson = { id: string; name: string; reference?: string; meta?: Record<string, unknown>; type: string };

const artifactIn = (a: ArtifactJson, value: Artifact["value"]) =>
  create(ArtifactSchema, {
    type: a.type,
    id: a.id,
    name: a.name,
    reference: a.reference,
    meta: (a.meta ?? {}) as JsonObject,
    value,
  });

const actionIn = (a: z.output<typeof toolActionSchema>) =>
  create(ToolActionSchema, { tag: a.tag, name: a.name, path: a.path, input: (a.input ?? {}) as JsonObject });

function contentIn(c: ContentJson): MessageContent {
  switch (c.type) {
    case "TextMessageContent":
      return create(MessageContentSchema, {
        kind: { case: "text", value: artifactIn(c.artifact, { case: "text", value: c.artifact.value }) },
      });
    case "ImageMessageContent": {
      const { value, format, width, height } = c.artifact;
      const image = create(ImageSchema, { data: Buffer.from(value, "base64"), format, width, height });
      return create(MessageContentSchema, {
        kind: { case: "image", value: artifactIn(c.artifact, { case: "image", value: image }) },
      });
    }
    case "ActionCallMessageContent":
      return create(MessageContentSchema, {
        kind: {
          case: "actionCall",
          value: artifactIn(c.artifact, { case: "action", value: actionIn(c.artifact.value) }),
        },
      });
    case "ActionResultMessageContent": {
      const v = c.artifact.value;
      const value: Artifact["value"] =
        typeof v === "string" ? { case: "text", value: v } : { case: "json", value: jsonToValue(v) };
      return create(MessageContentSchema, {
        kind: { case: "actionResult", value: { artifact: artifactIn(c.artifact, value), action: actionIn(c.action) } },
      });
    }
  }
}

/** A griptape ToolAction. */
const toolActionJson = (a: ToolAction | undefined) => ({
  type: "ToolAction",
  tag: a?.tag ?? "",
  name: a?.name ?? "",
  path: a?.path ?? null,
  input: a?.input ?? {},
});

function artifactJson(a: Artifact | undefined) {
  if (!a) throw new Error("the runs service answered a content item without an artifact");
  const base = { type: a.type, id: a.id, reference: a.reference ?? null, meta: a.meta ?? {}, name: a.name };
  switch (a.value.case) {
    case "text":
      return { ...base, value: a.value.value };
    case "action":
      return { ...base, value: toolActionJson(a.value.value) };
    case "image": {
      const { data, format, width, height } = a.value.value;
      return { ...base, value: Buffer.from(data).toString("base64"), format, width, height };
    }
    case "json":
      return { ...base, value: valueToJson(a.value.value) };
    default:
      throw new Error("the runs service answered an artifact without a value");
  }
}

function contentJson(c: MessageContent) {
  switch (c.kind.case) {
    case "text":
      return { type: "TextMessageContent", artifact: artifactJson(c.kind.value) };
    case "image":
      return { type: "ImageMessageContent", artifact: artifactJson(c.kind.value) };
    case "actionCall":
      return { type: "ActionCallMessageContent", artifact: artifactJson(c.kind.value) };
    case "actionResult":
      return {
        type: "ActionResultMessageContent",
        artifact: artifactJson(c.kind.value.artifact),
        action: toolActionJson(c.kind.value.action),
      };
    default:
      throw new Error("the runs service answered an empty content item");
  }
}

const usageJson = (u: Usage | undefined) => ({
  type: "Message.Usage",
  input_tokens: u?.inputTokens ?? null,
  output_tokens: u?.outputTokens ?? null,
});

/** A griptape Message: `Message.from_dict` rebuilds it. */
export function messageJson(m: ChatMessage | undefined) {
  if (!m) throw new Error("the runs service answered without a message");
  return { type: "Message", role: m.role, content: m.content.map(contentJson), usage: usageJson(m.usage) };
}

/** A griptape DeltaMessage: `DeltaMessage.from_dict` rebuilds it. */
export function deltaMessageJson(r: StreamChatMessageResponse) {
  const frame = (content: unknown, usage: Usage | undefined) => ({
    type: "DeltaMessage",
    role: "assistant",
    content,
    usage: usageJson(usage),
  });
  switch (r.kind.case) {
    case "textDelta":
      return frame({ type: "TextDeltaMessageContent", index: r.kind.value.index, text: r.kind.value.text }, undefined);
    case "actionCallDelta": {
      const d = r.kind.value;
      return frame(
        {
          type: "ActionCallDeltaMessageContent",
          index: d.index,
          tag: d.tag ?? null,
          name: d.name ?? null,
          path: d.path ?? null,
          partial_input: d.partialInput ?? null,
        },
        undefined,
      );
    }
    case "usage":
      return frame(null, r.kind.value);
    default:
      throw new Error("the runs service streamed an empty message");
  }
}

/** Documentation shapes for /openapi.json. */
const usageAnswer = z
  .object({
    type: z.string().meta(usageFields.type),
    input_tokens: z.number().nullable().meta(usageFields.input_tokens),
    output_tokens: z.number().nullable().meta(usageFields.output_tokens),
  })
  .meta(usageFields.usage);

export const chatMessageResponseSchema = z.object({
  type: z.literal("Message").meta({ description: "griptape's class name, Message" }),
  role: z.string().meta({ description: "assistant" }),
  content: z
    .array(
      z
        .object({
          type: z.string().meta({ description: "TextMessageContent, or ActionCallMessageContent for a tool call" }),
          artifact: z
            .record(z.string(), z.unknown())
            .meta({ description: "The text or the call, as a griptape artifact" }),
        })
        .loose(),
    )
    .meta({ description: "What the model answered" }),
  usage: usageAnswer,
});

export const deltaMessageSchema = z.object({
  type: z.literal("DeltaMessage").meta({ description: "griptape's class name, DeltaMessage" }),
  role: z.string().meta({ description: "assistant" }),
  content: z
    .record(z.string(), z.unknown())
    .nullable()
    .meta({ description: "The next piece of the answer (text or a tool call's); null in the closing usage frame" }),
  usage: usageAnswer,
});
