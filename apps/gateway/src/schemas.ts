import { producedUuidPatternSource } from "@loom/contracts/ids";
import { runStatuses } from "@loom/contracts/run-lifecycle";
import { headerNamePatternSource, headerValuePatternSource } from "@loom/contracts/text";
import { z } from "zod";

/**
 * Response shapes of docs/api.md §2, as zod schemas: documented in
 * /openapi.json and checked against real responses in the tests.
 */
export const timestamp = z.iso.datetime({ offset: false, precision: 3 });
/** An id as Loom produces it: a v4 uuid in lower case. */
export const uuidString = z
  .string()
  .regex(new RegExp(producedUuidPatternSource), "must be a lower-case v4 uuid")
  .meta({ format: "uuid" });

/** The fields every resource has, described once. */
const createdAt = timestamp.meta({ description: "When it was created (UTC, ISO 8601, milliseconds)" });
const updatedAt = timestamp.meta({ description: "When it last changed (UTC, ISO 8601, milliseconds)" });
const createdBy = z.string().meta({ description: "The id of the user who created it (of the API key's user)" });
const organizationId = uuidString.meta({ description: "The organization it belongs to" });
const idsOf = (what: string) => z.array(uuidString).meta({ description: `The ids of the ${what} it uses` });

export const paginationSchema = z
  .strictObject({
    page_number: z.number().int().meta({ description: "This page's number, from 1" }),
    page_size: z.number().int().meta({ description: "How many items a page holds" }),
    total_count: z.number().int().meta({ description: "How many items there are on all pages" }),
    total_pages: z.number().int().meta({ description: "How many pages there are" }),
    next_page: z.number().int().optional().meta({ description: "The next page's number; absent on the last page" }),
    previous_page: z
      .number()
      .int()
      .optional()
      .meta({ description: "The previous page's number; absent on the first page" }),
  })
  .meta({ description: "Where this page is: ask for another with `?page=`" });

export const errorBodySchema = z.strictObject({
  type: z.string().meta({ description: "The kind of error, e.g. ValidationError, NotFound, RateLimited" }),
  errors: z
    .array(
      z.strictObject({
        message: z.string().meta({ description: "What is wrong, in words" }),
        path: z
          .string()
          .optional()
          .meta({ description: "The field it is about, e.g. `body.name`, `query.page`, `header.Idempotency-Key`" }),
      }),
    )
    .meta({ description: "One entry per problem" }),
  request_id: z
    .string()
    .meta({ description: "This request's id (also its X-Request-Id header): quote it in a report" }),
});

export const userSchema = z.strictObject({
  user_id: uuidString.meta({ description: "The user's id" }),
  email: z.string().meta({ description: "The user's email address" }),
  name: z.string().optional().meta({ description: "The user's name, when known" }),
  organizations: z.array(uuidString).meta({ description: "The ids of the organizations the user belongs to" }),
  created_at: createdAt,
  updated_at: updatedAt,
});

export const apiKeySchema = z.strictObject({
  api_key_id: uuidString.meta({ description: "The key's id (not its value, which is shown only once, on creation)" }),
  organization_id: organizationId,
  name: z.string().meta({ description: "A name to tell keys apart" }),
  active: z.boolean().meta({ description: "Always true: a deleted key is gone (404), not inactive" }),
  created_at: createdAt,
  created_by: createdBy,
  last_used: timestamp.meta({ description: "When a request last used it; `created_at` until then" }),
  updated_at: updatedAt,
});

export const createdApiKeySchema = apiKeySchema.extend({
  value: z.string().meta({
    description: "The key itself (`loom_...`), to send as `Authorization: Bearer <value>`: shown only this once",
  }),
});

export const apiKeyListSchema = z.strictObject({
  api_keys: z.array(apiKeySchema).meta({ description: "This page's keys" }),
  pagination: paginationSchema,
});

export const assistantSchema = z.strictObject({
  assistant_id: uuidString.meta({ description: "The assistant's id" }),
  organization_id: organizationId,
  name: z.string().meta({ description: "The assistant's name" }),
  description: z.string().meta({ description: "What the assistant is for, in words; empty when not given" }),
  input: z.string().optional().meta({
    description:
      "The user message of a run given no `input`, as a template: `{{ args[N] }}` is the run's N-th arg, `{{ args }}` all of them",
  }),
  knowledge_base_ids: idsOf("knowledge bases its runs search"),
  retriever_ids: idsOf("retrievers (accepted and echoed; Loom has no retrievers yet)"),
  ruleset_ids: idsOf("rulesets whose rules its runs follow"),
  structure_ids: idsOf("structures (accepted and echoed; Loom has no structures yet)"),
  tool_ids: idsOf("tools its runs may call"),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
});

export const assistantListSchema = z.strictObject({
  assistants: z.array(assistantSchema).meta({ description: "This page's assistants" }),
  pagination: paginationSchema,
});

/** A free-form JSON object: a thread's, a message's, a ruleset's or a rule's `metadata`, never null. */
const metadataSchema = z.record(z.string(), z.unknown());

export const rulesetSchema = z.strictObject({
  ruleset_id: uuidString.meta({ description: "The ruleset's id" }),
  organization_id: organizationId,
  name: z.string().meta({ description: "The ruleset's name" }),
  alias: z.string().nullable().meta({ description: "Another name to find it by; null: none" }),
  description: z.string().meta({ description: "What the ruleset is for, in words; empty when not given" }),
  metadata: metadataSchema.meta({ description: "Any JSON object the client keeps with it; `{}` when none" }),
  rule_ids: z.array(uuidString).meta({ description: "Its rules, in the order they reach the model" }),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
});

export const rulesetListSchema = z.strictObject({
  rulesets: z.array(rulesetSchema).meta({ description: "This page's rulesets" }),
  pagination: paginationSchema,
});

export const ruleSchema = z.strictObject({
  rule_id: uuidString.meta({ description: "The rule's id" }),
  organization_id: organizationId,
  name: z.string().meta({ description: "The rule's name" }),
  // griptape's Rule, or its JsonSchemaRule.
  rule: z.union([z.string(), z.record(z.string(), z.unknown())]).meta({
    description: "An instruction for the model, in words; or a JSON schema object its answer must follow",
  }),
  metadata: metadataSchema.meta({ description: "Any JSON object the client keeps with it; `{}` when none" }),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
});

export const ruleListSchema = z.strictObject({
  rules: z.array(ruleSchema).meta({ description: "This page's rules" }),
  pagination: paginationSchema,
});

export const runStatusSchema = z.enum(runStatuses);

export const textArtifactSchema = z.strictObject({
  type: z.literal("TextArtifact"),
  id: z.string().regex(/^[0-9a-f]{32}$/),
  reference: z.null(),
  meta: z.strictObject({}),
  name: z.string(),
  value: z.string(),
});

/** A decision on a tool call of a paused run: who, when, how and why. */
export const approvalDecisionSchema = z.strictObject({
  approved: z.boolean().meta({ description: "Whether the call may go ahead" }),
  reason: z
    .string()
    .optional()
    .meta({ description: "Why, when the decider said; a denial's reason reaches the model" }),
  by: z.string().meta({ description: "the deciding user's id; `loom` for a call denied at the deadline" }),
  at: timestamp.meta({ description: "When it was decided" }),
});

/** A tool call a paused run awaits a decision on (Loom's, in `status_detail.calls`). */
export const awaitingCallSchema = z.strictObject({
  call_id: z.string().meta({ description: "The call's id, to name in a decision" }),
  tool_id: z.string().meta({ description: "The id of the tool called" }),
  tool: z.string().meta({ description: "The tool's name" }),
  activity: z.string().meta({ description: "The activity the model calls" }),
  input: z.record(z.string(), z.unknown()).meta({ description: "The input the model gives it" }),
  decision: approvalDecisionSchema.optional().meta({ description: "The decision, once made" }),
});

export const assistantRunSchema = z.strictObject({
  assistant_run_id: uuidString.meta({ description: "The run's id" }),
  assistant_id: uuidString.meta({ description: "The assistant that runs" }),
  thread_id: uuidString.optional().meta({ description: "The thread whose conversation it continues; absent: none" }),
  args: z.array(z.string()).meta({ description: "The arguments the input template is filled with" }),
  input: z.string().optional().meta({ description: "The run's own input, when it was given one" }),
  output: z
    .unknown()
    .optional()
    .meta({ description: "The answer, a griptape artifact (TextArtifact), once SUCCEEDED" }),
  status: runStatusSchema.meta({
    description: "QUEUED, STARTING, RUNNING, then SUCCEEDED, FAILED, ERROR or CANCELLED (the last four are final)",
  }),
  status_detail: z
    .strictObject({
      reason: z.string().meta({ description: "Why it is in this status, e.g. AwaitingApproval, ProviderError" }),
      message: z.string().optional().meta({ description: "What happened, in words" }),
      // Loom's, with reason AwaitingApproval (docs/behaviour.md §5, "Approval of tool calls").
      calls: z.array(awaitingCallSchema).optional().meta({
        description: "With AwaitingApproval: the tool calls awaiting a decision (DecideAssistantRunApprovals)",
      }),
      deadline: timestamp.optional().meta({ description: "With AwaitingApproval: when undecided calls are denied" }),
    })
    .optional()
    .meta({ description: "Why the run is where it is; absent while nothing is to say" }),
  stream: z
    .boolean()
    .meta({ description: "Whether the model's answer also arrives as TextChunkEvents, chunk by chunk" }),
  knowledge_base_ids: idsOf("knowledge bases the run searches"),
  retriever_ids: idsOf("retrievers (accepted and echoed; Loom has no retrievers yet)"),
  ruleset_ids: idsOf("rulesets whose rules the run follows"),
  structure_ids: idsOf("structures (accepted and echoed; Loom has no structures yet)"),
  tool_ids: idsOf("tools the run may call"),
  completed_at: timestamp.nullable().meta({ description: "When it reached a final status; null until then" }),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
});

export const assistantRunListSchema = z.strictObject({
  assistant_runs: z.array(assistantRunSchema).meta({ description: "This page's runs, newest first" }),
  pagination: paginationSchema,
});

export const threadSchema = z.strictObject({
  thread_id: uuidString.meta({ description: "The thread's id" }),
  organization_id: organizationId,
  name: z.string().meta({ description: "The thread's name" }),
  alias: z
    .string()
    .nullable()
    .meta({ description: "Another name to find it by (`?alias=` of ListThreads); null: none" }),
  metadata: metadataSchema.meta({ description: "Any JSON object the client keeps with the thread; `{}` when none" }),
  message_count: z.number().int().min(0).meta({ description: "How many messages it holds" }),
  messages_length: z
    .number()
    .int()
    .min(0)
    .meta({ description: "The characters of all its messages' `input` and `output`" }),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
});

export const threadListSchema = z.strictObject({
  threads: z.array(threadSchema).meta({ description: "This page's threads" }),
  pagination: paginationSchema,
});

export const messageSchema = z.strictObject({
  message_id: uuidString.meta({ description: "The message's id" }),
  thread_id: uuidString.meta({ description: "The thread it belongs to" }),
  index: z.number().int().min(0).meta({ description: "Its place in the thread, from 0 (oldest first)" }),
  input: z.string().meta({ description: "What the user said" }),
  output: z.string().meta({ description: "What the assistant answered" }),
  metadata: metadataSchema.meta({ description: "Any JSON object the client keeps with the message; `{}` when none" }),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
});

export const messageListSchema = z.strictObject({
  messages: z.array(messageSchema).meta({ description: "This page's messages, in thread order" }),
  pagination: paginationSchema,
});

const eventFields = {
  event_id: uuidString.meta({ description: "The event's id" }),
  type: z.string().meta({ description: "What happened, as griptape names it: e.g. StartTaskEvent, TextChunkEvent" }),
  origin: z.string().meta({
    description:
      "Who wrote it: SYSTEM (Loom: the run's lifecycle), ASSISTANT (the model's activity) or USER (CreateEvents)",
  }),
  payload: z.unknown().meta({ description: "The event itself, as griptape serializes it" }),
  timestamp: z.number().meta({ description: "When it happened: seconds since the Unix epoch, with a fraction" }),
  created_at: timestamp.meta({ description: "When Loom stored it (UTC, ISO 8601, milliseconds)" }),
};

export const assistantEventSchema = z.strictObject({
  ...eventFields,
  assistant_run_id: uuidString.meta({ description: "The run it belongs to" }),
});
export const structureEventSchema = z.strictObject({
  ...eventFields,
  structure_run_id: uuidString.meta({ description: "The run it belongs to" }),
});

const eventListFields = {
  count: z.number().int().meta({ description: "How many events this answer holds" }),
  limit: z.number().int().meta({ description: "The most it could hold (the `limit` asked)" }),
  offset: z.number().int().meta({ description: "The offset of its first event" }),
  next_offset: z.number().int().meta({ description: "The offset to ask for next, to read on" }),
  total_count: z.number().int().meta({ description: "How many events the run has so far" }),
};
export const assistantEventListSchema = z.strictObject({
  events: z.array(assistantEventSchema).meta({ description: "The events, oldest first" }),
  ...eventListFields,
});
export const structureEventListSchema = z.strictObject({
  events: z.array(structureEventSchema).meta({ description: "The events, oldest first" }),
  ...eventListFields,
});

/** What a span's fields are, for the spans sent (CreateSpans) and answered (ListSpans) alike. */
export const spanFields = {
  span_id: { description: "The span's id (OpenTelemetry's, as sent)" },
  trace_id: { description: "The trace it belongs to" },
  parent_id: { description: "The enclosing span's id; null (or absent) for a root" },
  name: { description: "What the span timed, e.g. a task's or a tool call's name" },
  start_time: { description: "When it started: RFC 3339 with an offset, kept as sent" },
  end_time: { description: "When it ended: RFC 3339 with an offset, kept as sent" },
  status: { description: "OK, ERROR or UNSET (OpenTelemetry's span status)" },
  attributes: { description: "Its attributes, a JSON object; `{}` when none" },
  events: { description: "What happened during it, in order; `[]` when none" },
  event_name: { description: "The event's name" },
  event_timestamp: { description: "When it happened: RFC 3339 with an offset" },
} as const;

/** A span as its writer sent it (docs/behaviour.md §6): times are the RFC 3339 strings sent, `parent_id` null for a root. */
export const spanSchema = z.strictObject({
  span_id: z.string().meta(spanFields.span_id),
  trace_id: z.string().meta(spanFields.trace_id),
  parent_id: z.string().nullable().meta(spanFields.parent_id),
  name: z.string().meta(spanFields.name),
  start_time: z.string().meta(spanFields.start_time),
  end_time: z.string().meta(spanFields.end_time),
  status: z.enum(["OK", "ERROR", "UNSET"]).meta(spanFields.status),
  attributes: z.record(z.string(), z.unknown()).meta(spanFields.attributes),
  events: z
    .array(
      z.strictObject({
        name: z.string().meta(spanFields.event_name),
        timestamp: z.string().meta(spanFields.event_timestamp),
        attributes: z.record(z.string(), z.unknown()).meta(spanFields.attributes),
      }),
    )
    .meta(spanFields.events),
});
export const spanListSchema = z.strictObject({
  spans: z.array(spanSchema).meta({ description: "This page's spans, in the order stored" }),
  pagination: paginationSchema,
});

export const bucketSchema = z.strictObject({
  bucket_id: uuidString.meta({ description: "The bucket's id" }),
  organization_id: organizationId,
  name: z.string().meta({ description: "The bucket's name" }),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
});

export const bucketListSchema = z.strictObject({
  buckets: z.array(bucketSchema).meta({ description: "This page's buckets" }),
  pagination: paginationSchema,
});

/** An asset's bytes in JSON: UTF-8 text as a string, anything else in base64. */
export const assetContentsSchema = z.union([
  z.string(),
  z.strictObject({
    encoding: z.literal("base64").meta({ description: "How `data` is encoded" }),
    data: z.base64().meta({ description: "The bytes, base64-encoded" }),
  }),
]);

export const assetSchema = z.strictObject({
  name: z.string().meta({ description: "The asset's name in its bucket: a path such as `dir/file.txt`" }),
  organization_id: organizationId,
  bucket_id: uuidString.meta({ description: "The bucket it is in" }),
  size: z.number().int().min(0).optional().meta({ description: "Bytes stored; absent until the first upload" }),
  contents: assetContentsSchema
    .optional()
    .meta({ description: "With `include_contents=true`: the bytes, UTF-8 text as a string, anything else base64" }),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
});

export const assetListSchema = z.strictObject({
  assets: z.array(assetSchema).meta({ description: "This page's assets, newest first" }),
  pagination: paginationSchema,
  prefix: z.string().optional().meta({ description: "The `prefix` filter asked, if any" }),
  postfix: z.string().optional().meta({ description: "The `postfix` filter asked, if any" }),
});

export const assetUrlSchema = z.strictObject({
  url: z.url().meta({ description: "The signed URL: PUT the bytes to it, or GET them from it, without a key" }),
  headers: z
    .record(z.string(), z.string())
    .meta({ description: "Headers to send with the request to `url`, as they are" }),
  expires_at: timestamp.meta({ description: "When the URL stops working (UTC, ISO 8601)" }),
});

/** The URL is Stripe's, passed on as it comes (docs/api.md §4: a string; stripe-mock's fixtures are not even valid URIs). */
export const checkoutSessionSchema = z.strictObject({
  redirect_url: z.string().min(1).meta({ description: "Stripe's checkout page: send the user there to subscribe" }),
});

export const billingManagementUrlSchema = z.strictObject({
  billing_management_url: z
    .string()
    .min(1)
    .meta({ description: "Stripe's billing portal: where the user manages the subscription" }),
});

/** A tool's `code`: one single-key wrapper of the kinds Griptape Cloud's clients know (docs/api.md, Tools). */
export const toolCodeSchema = z
  .union([
    z.strictObject({
      github: z
        .strictObject({
          owner: z.string().meta({ description: "The repository's owner" }),
          name: z.string().meta({ description: "The repository's name" }),
          push: z
            .strictObject({
              branch: z.string().meta({ description: "The branch" }),
              tag: z.string().optional().meta({ description: "The tag, if any" }),
            })
            .meta({ description: "Which push of it" }),
        })
        .meta({ description: "Code in a GitHub repository" }),
    }),
    z.strictObject({
      data_lake: z
        .strictObject({
          bucket_id: z.string().meta({ description: "The bucket holding the code" }),
          asset_path: z.string().meta({ description: "The asset that is the code" }),
        })
        .meta({ description: "Code in a bucket" }),
    }),
    z.strictObject({ default: z.strictObject({}).meta({ description: "No code of its own (the default)" }) }),
  ])
  .meta({ description: "Where the tool's code is, stored as given: Loom runs no tool code, it calls `server`" });

export const envVarSchema = z.strictObject({
  name: z.string().meta({ description: "The variable's name" }),
  value: z.string().meta({ description: "Its value; with `source: secret_ref`, a secret's id" }),
  source: z
    .enum(["manual", "secret_ref"])
    .optional()
    .meta({ description: "manual: `value` is the value; secret_ref: `value` names a secret of the organization" }),
});

/** A header Loom sends to the tool server: a value as is, or a secret's id. */
export const toolHeaderSchema = z.union([
  z.strictObject({
    value: z
      .string()
      .regex(new RegExp(headerValuePatternSource), "must not hold CR, LF or NUL")
      .meta({ description: "The header's value, sent as is" }),
  }),
  z.strictObject({
    secret_ref: z
      .string()
      .meta({ format: "uuid", description: "The id of the secret whose value is sent (never shown in an answer)" }),
  }),
]);

/** Loom's extension of ToolDetail: the tool server Loom calls. */
export const toolServerSchema = z.strictObject({
  url: z.string().meta({
    description: "The server's absolute http or https URL, without credentials (not a metadata or link-local address)",
  }),
  transport: z
    .enum(["mcp", "griptape"])
    .meta({ description: "mcp: a remote MCP server (streamable HTTP); griptape: a griptape tool server" }),
  headers: z
    .record(z.string().regex(new RegExp(headerNamePatternSource), "must be an HTTP header name"), toolHeaderSchema)
    .meta({ description: "Headers Loom sends with every call, by name: a value, or a secret's id" }),
  // Loom's: which activities a run's model calls only once a person approved (docs/behaviour.md §5).
  approval_required: z
    .union([z.boolean(), z.array(z.string())])
    .optional()
    .meta({ description: "`true`: every activity needs approval; a list: these activities; absent or `false`: none" }),
});

export const toolSchema = z.strictObject({
  tool_id: uuidString.meta({ description: "The tool's id" }),
  organization_id: organizationId,
  name: z.string().meta({ description: "The tool's name" }),
  description: z.string().meta({ description: "What the tool does, in words; empty when never set" }),
  code: toolCodeSchema,
  env_vars: z.array(envVarSchema).meta({ description: "Environment variables, stored as given" }),
  // Required by the clients' ToolDetail; Loom deploys no tool code, so there is never one (docs/decisions.md).
  latest_deployment_id: z.null().meta({ description: "Always null: Loom deploys no tool code" }),
  tool_config_file: z.string().optional().meta({ description: "The tool's config file path, stored as given" }),
  server: toolServerSchema.optional().meta({ description: "The tool server Loom calls; absent until one is set" }),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
});

export const toolListSchema = z.strictObject({
  tools: z.array(toolSchema).meta({ description: "This page's tools" }),
  pagination: paginationSchema,
});

/** A secret in Griptape Cloud's SecretDetail shape: never its value (docs/api.md §2, Secret). */
export const secretSchema = z.strictObject({
  secret_id: uuidString.meta({ description: "The secret's id: what a tool's header or env var names as `secret_ref`" }),
  organization_id: organizationId,
  name: z.string().meta({ description: "The secret's name" }),
  created_at: createdAt,
  updated_at: updatedAt,
  // Required by the clients.
  last_used: timestamp.meta({ description: "When a tool call last read the value; `created_at` until then" }),
});

export const secretListSchema = z.strictObject({
  secrets: z.array(secretSchema).meta({ description: "This page's secrets" }),
  pagination: paginationSchema,
});
/**
 * A griptape artifact as griptape serializes it (docs/behaviour.md, Tool runs): the keys every artifact has, and an
 * ImageArtifact's format, width and height or a ListArtifact's item_separator and validate_uniform_types.
 */
export const artifactSchema = z.strictObject({
  type: z.string().meta({ description: "The artifact's class, e.g. TextArtifact, JsonArtifact, ErrorArtifact" }),
  id: z.string().meta({ description: "The artifact's id" }),
  reference: z.null().meta({ description: "Always null" }),
  meta: z.record(z.string(), z.unknown()).meta({ description: "griptape's metadata of it" }),
  name: z.string().meta({ description: "The artifact's name" }),
  value: z.unknown().meta({ description: "Its value: text, JSON, base64 image bytes or a list of artifacts" }),
  format: z.string().optional().meta({ description: "ImageArtifact: the image format, e.g. png" }),
  width: z.number().int().optional().meta({ description: "ImageArtifact: the width in pixels" }),
  height: z.number().int().optional().meta({ description: "ImageArtifact: the height in pixels" }),
  item_separator: z.string().optional().meta({ description: "ListArtifact: what joins its items as text" }),
  validate_uniform_types: z.boolean().optional().meta({ description: "ListArtifact: whether items must share a type" }),
});

/** A tool's activities as an OpenAPI document, the shape griptape's GriptapeCloudToolTool reads. */
export const toolOpenApiSchema = z.strictObject({
  openapi: z.string().meta({ description: "The OpenAPI version of this document" }),
  info: z
    .strictObject({
      title: z.string().meta({ description: "The tool's name" }),
      version: z.string().meta({ description: "The document's version" }),
      description: z.string().optional().meta({ description: "What the tool does, when it says" }),
    })
    .meta({ description: "The tool" }),
  paths: z
    .record(
      z.string(),
      z.strictObject({
        post: z
          .strictObject({
            operationId: z.string().meta({ description: "The activity's name" }),
            description: z.string().meta({ description: "What the activity does, as the model reads it" }),
            requestBody: z
              .strictObject({
                required: z.boolean().meta({ description: "Whether an input must be sent" }),
                content: z
                  .strictObject({
                    "application/json": z
                      .strictObject({
                        schema: z.record(z.string(), z.unknown()).meta({ description: "The JSON schema of the input" }),
                      })
                      .meta({ description: "The input as JSON" }),
                  })
                  .meta({ description: "The input's media types" }),
              })
              .meta({ description: "The activity's input" }),
            responses: z
              .record(
                z.string(),
                z.strictObject({ description: z.string().meta({ description: "What the answer is" }) }),
              )
              .meta({ description: "Its answers, by status" }),
          })
          .meta({ description: "Calling the activity (InvokeToolActivity)" }),
      }),
    )
    .meta({ description: "One `/activities/<name>` path per activity" }),
});

/** A listing that failed: what went wrong, and the tool run that records it (Griptape Cloud's shape). */
export const toolOpenApiErrorSchema = z.strictObject({
  error: z.string().meta({ description: "Why the server could not list its activities" }),
  tool_run_id: uuidString.meta({ description: "The tool run that records the failed listing" }),
});

/** Griptape Cloud's ToolRunDetail, plus Loom's `assistant_run_id` when an assistant run made the call. */
export const toolRunSchema = z.strictObject({
  tool_run_id: uuidString.meta({ description: "The tool run's id" }),
  tool_id: uuidString.meta({ description: "The tool called" }),
  status: runStatusSchema.meta({
    description: "QUEUED, STARTING, RUNNING, then SUCCEEDED, FAILED, ERROR or CANCELLED (the last four are final)",
  }),
  runtime_path: z
    .string()
    .meta({ description: "`/activities/<name>` for an activity's call, `/openapi` for a listing that failed" }),
  input: z.unknown().meta({ description: "The activity's input object (`{}` for a listing)" }),
  output: artifactSchema
    .optional()
    .meta({ description: "The result, a griptape artifact; absent until the run ends, and when cancelled" }),
  status_detail: z.string().optional().meta({ description: "Why the run did not succeed; absent when it did" }),
  assistant_run_id: z
    .string()
    .optional()
    .meta({ description: "The assistant run whose model made the call, if one did" }),
  created_at: createdAt,
  created_by: createdBy,
  started_at: timestamp.nullable().meta({ description: "When the call started; null until then" }),
  completed_at: timestamp.nullable().meta({ description: "When it reached a final status; null until then" }),
  updated_at: updatedAt,
});

export const toolRunListSchema = z.strictObject({
  tool_runs: z.array(toolRunSchema).meta({ description: "This page's tool runs, newest first" }),
  pagination: paginationSchema,
});

export const toolRunLogsSchema = z.strictObject({
  logs: z.array(z.string()).meta({ description: "The run's log lines, oldest first" }),
});

/**
 * Loom's own index of a knowledge base, as Griptape Cloud's `gtc_pg_vector`
 * kind (a platform-managed index): the only kind its clients parse whose keys
 * say what Loom keeps (docs/decisions.md, "Knowledge bases").
 */
export const knowledgeBaseConfigSchema = z.strictObject({
  gtc_pg_vector: z
    .strictObject({
      embedding_model: z.string().nullable().meta({
        description: "The model that embeds its chunks (`provider:model`); `null`: none, keyword search only",
      }),
      // Required by the clients; Loom's queries take only `query_args.count`, described in docs/api.md.
      query_schema: z.null().meta({ description: "Always null (the clients require it)" }),
      use_default_embedding_model: z
        .literal(false)
        .meta({ description: "Always false: Loom has no default embedding model" }),
    })
    .meta({ description: "Loom's own index, the only kind" }),
});

/** Griptape Cloud's KnowledgeBaseDetail, of Loom's one kind (docs/api.md, Knowledge bases). */
export const knowledgeBaseSchema = z.strictObject({
  knowledge_base_id: uuidString.meta({ description: "The knowledge base's id" }),
  organization_id: organizationId,
  name: z.string().meta({ description: "The knowledge base's name" }),
  description: z.string().meta({ description: "What it holds, in words; empty when not given" }),
  type: z.literal("gtc_pg_vector").meta({ description: "Always gtc_pg_vector: Loom's own index" }),
  config: knowledgeBaseConfigSchema.meta({ description: "The index: which model embeds its chunks, if any" }),
  asset_paths: z.array(z.string()).meta({
    description:
      "`<bucket_id>/<asset name>`, `<bucket_id>/<folder>/` (every asset under it) or `<bucket_id>/` (the bucket)",
  }),
  // Loom's: the data connectors it is fed from too (docs/api.md, Knowledge bases).
  data_connector_ids: z.array(uuidString).meta({ description: "The data connectors it is fed from too" }),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
});

export const knowledgeBaseListSchema = z.strictObject({
  knowledge_bases: z.array(knowledgeBaseSchema).meta({ description: "This page's knowledge bases" }),
  pagination: paginationSchema,
});

/** Griptape Cloud's DataConnectorDetail, of the one kind Loom serves: `data_lake`, a bucket of the organization. */
export const dataConnectorSchema = z.strictObject({
  data_connector_id: uuidString.meta({ description: "The data connector's id" }),
  organization_id: organizationId,
  name: z.string().meta({ description: "The data connector's name" }),
  description: z.string().meta({ description: "What it reads, in words; empty when not given" }),
  type: z.literal("data_lake").meta({ description: "Always data_lake: a bucket of the organization" }),
  config: z
    .strictObject({
      data_lake: z
        .strictObject({
          bucket_id: uuidString.meta({ description: "The bucket it reads" }),
          asset_paths: z.array(z.string()).meta({
            description:
              'Asset names and folders (ending in "/": every asset under it) in the bucket; empty: the whole bucket',
          }),
        })
        .meta({ description: "A bucket of the organization, the only kind" }),
    })
    .meta({ description: "Which bucket, and which of its files" }),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
});

export const dataConnectorListSchema = z.strictObject({
  data_connectors: z.array(dataConnectorSchema).meta({ description: "This page's data connectors" }),
  pagination: paginationSchema,
});

export const knowledgeBaseJobStatuses = ["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"] as const;

/** Griptape Cloud's KnowledgeBaseJobDetail (docs/api.md, Knowledge base jobs). */
export const knowledgeBaseJobSchema = z.strictObject({
  knowledge_base_job_id: uuidString.meta({ description: "The job's id" }),
  knowledge_base_id: uuidString.meta({ description: "The knowledge base it ingests into" }),
  organization_id: organizationId,
  status: z
    .enum(knowledgeBaseJobStatuses)
    .meta({ description: "QUEUED, RUNNING, then SUCCEEDED, FAILED or CANCELLED (the last three are final)" }),
  status_detail: z.string().nullable().meta({ description: "Why it FAILED or was CANCELLED; null otherwise" }),
  bytes_ingested: z
    .number()
    .int()
    .nonnegative()
    .meta({ description: "Bytes of the files read (unchanged files are skipped)" }),
  errors: z
    .array(
      z.strictObject({
        message: z.string().meta({ description: "What went wrong with the file, in words" }),
        type: z.string().meta({
          description: "unsupported_type, too_large, unreadable, no_text, limit_exceeded or not_found",
        }),
        path: z.string().meta({ description: "`<bucket_id>/<asset name>` (or the connector or bucket that is gone)" }),
      }),
    )
    .meta({ description: "The files the job could not ingest; it went on with the others" }),
  created_at: createdAt,
  created_by: createdBy,
  updated_at: updatedAt,
  completed_at: timestamp.nullable().meta({ description: "When it reached a final status; null until then" }),
});

export const knowledgeBaseJobListSchema = z.strictObject({
  knowledge_base_jobs: z.array(knowledgeBaseJobSchema).meta({ description: "This page's jobs, newest first" }),
  pagination: paginationSchema,
});

/**
 * A chunk a query found, as griptape's vector store entry: exactly these keys, since griptape 1.13's
 * `BaseVectorStoreDriver.Entry` takes no other (an extra key is a TypeError in its driver).
 */
export const knowledgeBaseQueryEntrySchema = z.strictObject({
  id: z.string().meta({ description: "The chunk's id" }),
  score: z.number().meta({
    description: "How well it matches: its BM25 score (keyword mode) or its fused score in (0, 1] (hybrid mode)",
  }),
  vector: z.array(z.number()).nullable().meta({ description: "The chunk's embedding when include_vectors was asked" }),
  meta: z
    .strictObject({
      artifact: z.string().meta({
        description:
          "The chunk as a griptape TextArtifact serialized as JSON; its meta names the asset and the chunk's place",
      }),
    })
    .meta({ description: "The chunk itself" }),
  namespace: z.null().meta({ description: "Always null" }),
});

/** Griptape Cloud's KnowledgeBaseQueryDetail (docs/api.md, Querying knowledge bases). */
export const knowledgeBaseQuerySchema = z.strictObject({
  knowledge_base_query_id: uuidString.meta({ description: "The query's id" }),
  knowledge_base_id: uuidString.meta({ description: "The knowledge base queried" }),
  query: z.string().meta({ description: "What was looked for" }),
  // Loom's: what the query was answered with.
  query_args: z
    .strictObject({
      count: z.number().int().meta({ description: "How many chunks were asked for" }),
      include_vectors: z.boolean().meta({ description: "Whether embeddings were asked for" }),
    })
    .meta({ description: "What the query was answered with" }),
  mode: z.enum(["keyword", "hybrid"]).meta({
    description: "keyword: BM25 only (no embedding model); hybrid: keyword and vector search fused",
  }),
  entries: z.array(knowledgeBaseQueryEntrySchema).meta({ description: "The chunks found, best first" }),
  created_at: createdAt,
  created_by: createdBy,
});

export const knowledgeBaseQueryListSchema = z.strictObject({
  knowledge_base_queries: z.array(knowledgeBaseQuerySchema).meta({ description: "This page's queries, newest first" }),
  pagination: paginationSchema,
});

/** Griptape Cloud's KnowledgeBaseSearchDetail (docs/api.md, Querying knowledge bases). */
export const knowledgeBaseSearchSchema = z.strictObject({
  knowledge_base_search_id: uuidString.meta({ description: "The search's id" }),
  knowledge_base_id: uuidString.meta({ description: "The knowledge base searched" }),
  query: z.string().meta({ description: "The question asked" }),
  result: z.string().meta({ description: "The answer the search model wrote from the chunks found" }),
  // Loom's: the model that wrote it and the chunks it was given (entries as a query's).
  model: z.string().meta({ description: "The model that wrote `result` (`provider:model`)" }),
  entries: z
    .array(knowledgeBaseQueryEntrySchema)
    .meta({ description: "The chunks it was given, as a query's; `result` cites them by number ([1])" }),
  created_at: createdAt,
  created_by: createdBy,
});

export const knowledgeBaseSearchListSchema = z.strictObject({
  knowledge_base_searches: z
    .array(knowledgeBaseSearchSchema)
    .meta({ description: "This page's searches, newest first" }),
  pagination: paginationSchema,
});
