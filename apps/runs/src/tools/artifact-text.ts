import type { SerializedArtifact } from "../griptape.ts";

/**
 * An artifact as text, as griptape's `to_text()` renders it for a model: a
 * JsonArtifact its JSON, an ImageArtifact a line naming its format and size,
 * a ListArtifact its items' texts joined by its separator, any other its value.
 */
export function artifactText(artifact: SerializedArtifact): string {
  const { type, value } = artifact;
  if (type === "JsonArtifact") return JSON.stringify(value ?? null);
  if (type === "ImageArtifact" || type === "BlobArtifact") {
    const bytes = typeof value === "string" ? Buffer.byteLength(value, "base64") : 0;
    return type === "ImageArtifact"
      ? `Image, format: ${String(artifact.format)}, size: ${bytes} bytes`
      : `Blob, size: ${bytes} bytes`;
  }
  if (type === "ListArtifact" && Array.isArray(value)) {
    const separator = typeof artifact.item_separator === "string" ? artifact.item_separator : "\n\n";
    return value.map((item) => artifactText(item as SerializedArtifact)).join(separator);
  }
  return typeof value === "string" ? value : JSON.stringify(value ?? "");
}

/**
 * A result's text cut to `maxChars`, with a note saying so, so that the model
 * knows it saw only the start (docs/behaviour.md §5, "Runs with tools").
 */
export function boundedText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n[Loom: this result was cut to its first ${maxChars} of ${text.length} characters]`;
}
