import { valueToJson } from "@loom/contracts/json-value";
import type { Artifact, MessageContent } from "@loom/proto/runs/v1/chat_pb";

/** An artifact as text, as griptape's `to_text()` renders it. */
export function artifactText(artifact: Artifact): string {
  const value = artifact.value;
  switch (value.case) {
    case "text":
      return value.value;
    case "json":
      return JSON.stringify(valueToJson(value.value));
    case "action":
      return JSON.stringify({
        type: "ToolAction",
        tag: value.value.tag,
        name: value.value.name,
        path: value.value.path ?? null,
        input: value.value.input ?? {},
      });
    case "image":
      return `Image, format: ${value.value.format}, size: ${value.value.data.length} bytes`;
    default:
      return "";
  }
}

/** A message content as text: an action result's artifact, or the artifact itself. */
export function contentText(item: MessageContent): string {
  const kind = item.kind;
  if (kind.case === "actionResult") return kind.value.artifact ? artifactText(kind.value.artifact) : "";
  return kind.value ? artifactText(kind.value) : "";
}
