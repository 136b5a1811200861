import { randomUUID } from "node:crypto";

/**
 * The griptape framework's serialization of artifacts, messages and events
 * (docs/behaviour.md §6). The griptape drivers rebuild each payload with
 * `from_dict`, which rejects any extra or missing key, so these builders are
 * the only place payloads are made, and a test pins every key set.
 *
 * An id is as griptape makes them, `uuid.uuid4().hex`: 32 hex digits, from
 * Node's pooled UUIDs (`randomBytes` asks the kernel on every call: 2.4 µs
 * against 0.6 µs, measured idle; more under load; several ids a run).
 */
export const griptapeId = () => randomUUID().replaceAll("-", "");
const seconds = (at: Date) => at.getTime() / 1000;

export interface TextArtifact {
  type: "TextArtifact";
  id: string;
  reference: null;
  /** Empty, but for a run's output citing its knowledge (griptape keeps `meta` as any dict). */
  meta: Record<string, unknown>;
  name: string;
  value: string;
}

/** A TextArtifact; its `id` fresh and its `name` the id (as griptape names one) unless given. */
export function textArtifact(value: string, id = griptapeId(), name = id): TextArtifact {
  return { type: "TextArtifact", id, reference: null, meta: {}, name, value };
}

/** Who a stored artifact is: a thread's turn keeps its artifact's id and name in a prompt stack, as griptape's memory does. */
export interface ArtifactIdentity {
  id: string;
  name: string;
}

/** A prompt-stack message of one text, its artifact new or `stored`. */
export function message(
  role: "user" | "assistant" | "system",
  text: string,
  usage = { input: 0, output: 0 },
  stored?: ArtifactIdentity,
) {
  return {
    type: "Message",
    role,
    content: [{ type: "TextMessageContent", artifact: textArtifact(text, stored?.id, stored?.name) }],
    usage: { type: "Message.Usage", input_tokens: usage.input, output_tokens: usage.output },
  };
}

const base = (type: string, at: Date) => ({ type, id: griptapeId(), timestamp: seconds(at), meta: {} });

export const griptapeEvents = {
  startStructureRun: (input: TextArtifact, at: Date) => ({
    ...base("StartStructureRunEvent", at),
    structure_id: null,
    input_task_input: input,
    input_task_output: null,
  }),
  /** `messages`: prompt-stack messages (`message`, `actionCallsMessage`, `actionResultsMessage`). */
  startPrompt: (model: string, messages: object[], at: Date) => ({
    ...base("StartPromptEvent", at),
    model,
    prompt_stack: { type: "PromptStack", messages },
  }),
  textChunk: (token: string, at: Date) => ({ ...base("TextChunkEvent", at), index: 0, token }),
  finishPrompt: (model: string, result: string, inputTokens: number, outputTokens: number, at: Date) => ({
    ...base("FinishPromptEvent", at),
    model,
    result,
    input_token_count: inputTokens,
    output_token_count: outputTokens,
  }),
  finishStructureRun: (input: TextArtifact, output: TextArtifact, at: Date) => ({
    ...base("FinishStructureRunEvent", at),
    structure_id: null,
    output_task_input: input,
    output_task_output: output,
  }),
};

/**
 * Any artifact as griptape serializes it (a tool's result, from the tools
 * service): a JSON object with its `type`; its other keys are its type's.
 */
export type SerializedArtifact = { type: string; name?: unknown; value?: unknown } & Record<string, unknown>;

/** An ErrorArtifact: a tool call that failed, as griptape gives one to the model. */
export function errorArtifact(value: string, name?: string): SerializedArtifact {
  const id = griptapeId();
  return { type: "ErrorArtifact", id, reference: null, meta: {}, name: name ?? id, value };
}

/** A ListArtifact of `items`, with griptape's defaults. */
export function listArtifact(items: SerializedArtifact[]): SerializedArtifact {
  const id = griptapeId();
  return {
    type: "ListArtifact",
    id,
    reference: null,
    meta: {},
    name: id,
    value: items,
    item_separator: "\n\n",
    validate_uniform_types: false,
  };
}

/** One tool call as griptape's ToolAction names it: `tag` the call's id, `name` the tool, `path` the activity. */
export interface ToolAction {
  tag: string;
  name: string;
  path: string;
  input: Record<string, unknown>;
}

const toolAction = (action: ToolAction) => ({ type: "ToolAction", ...action });

/**
 * A subtask's actions as griptape's `actions_to_dicts` writes them: each key
 * only when truthy (an empty input is left out).
 */
const actionDicts = (actions: ToolAction[]) =>
  actions.map((action) =>
    Object.fromEntries(
      Object.entries(action).filter(
        ([, value]) => Boolean(value) && !(isObject(value) && Object.keys(value).length === 0),
      ),
    ),
  );

const isObject = (value: unknown) => typeof value === "object" && value !== null && !Array.isArray(value);

/** A prompt-stack message of the model's tool calls (and what it said with them), as griptape's memory keeps one. */
export function actionCallsMessage(text: string, actions: ToolAction[]) {
  return {
    type: "Message",
    role: "assistant",
    content: [
      ...(text === "" ? [] : [{ type: "TextMessageContent", artifact: textArtifact(text) }]),
      ...actions.map((action) => {
        const id = griptapeId();
        return {
          type: "ActionCallMessageContent",
          artifact: { type: "ActionArtifact", id, reference: null, meta: {}, name: id, value: toolAction(action) },
        };
      }),
    ],
    usage: { type: "Message.Usage", input_tokens: 0, output_tokens: 0 },
  };
}

/** A prompt-stack message of tool results: each the text the model was given, with its call. */
export function actionResultsMessage(results: Array<{ action: ToolAction; text: string }>) {
  return {
    type: "Message",
    role: "user",
    content: results.map(({ action, text }) => ({
      type: "ActionResultMessageContent",
      artifact: textArtifact(text),
      action: toolAction(action),
    })),
    usage: { type: "Message.Usage", input_tokens: 0, output_tokens: 0 },
  };
}

/** One step's actions subtask: its id, the prompt task it belongs to, and what the model said with its calls. */
export interface ActionsSubtask {
  id: string;
  parentTaskId: string;
  thought: string;
  /** Its input, the same artifact in its start and finish events: a TextArtifact of `thought`. */
  input: TextArtifact;
  actions: ToolAction[];
}

const actionsSubtaskEvent = (
  type: "StartActionsSubtaskEvent" | "FinishActionsSubtaskEvent",
  subtask: ActionsSubtask,
  output: SerializedArtifact | null,
  at: Date,
) => ({
  ...base(type, at),
  task_id: subtask.id,
  task_parent_ids: [subtask.parentTaskId],
  task_child_ids: [],
  task_input: subtask.input,
  task_output: output,
  subtask_parent_task_id: subtask.parentTaskId,
  subtask_thought: subtask.thought === "" ? null : subtask.thought,
  subtask_actions: actionDicts(subtask.actions),
});

/** The events of a run's tool calls, as griptape's ActionsSubtask and prompt driver publish them (docs/behaviour.md §6). */
export const griptapeActionEvents = {
  /** Before a step's calls run. */
  startActionsSubtask: (subtask: ActionsSubtask, at: Date) =>
    actionsSubtaskEvent("StartActionsSubtaskEvent", subtask, null, at),
  /** After they all ended: `output` the ListArtifact of each call's result, named `<tag> output`. */
  finishActionsSubtask: (subtask: ActionsSubtask, output: SerializedArtifact, at: Date) =>
    actionsSubtaskEvent("FinishActionsSubtaskEvent", subtask, output, at),
  /** A streamed piece of a tool call: the first names it (tag, name, path), the next carry its input's JSON. */
  actionChunk: (
    chunk: { index: number; partialInput?: string; tag?: string; name?: string; path?: string },
    at: Date,
  ) => ({
    ...base("ActionChunkEvent", at),
    index: chunk.index,
    partial_input: chunk.partialInput ?? null,
    tag: chunk.tag ?? null,
    name: chunk.name ?? null,
    path: chunk.path ?? null,
  }),
};
