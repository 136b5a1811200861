import type { CallToolResult } from "@ai-sdk/mcp";
import {
  type Artifact,
  artifactOfText,
  blobArtifact,
  errorArtifact,
  imageArtifact,
  jsonArtifact,
  oneArtifact,
  textArtifact,
  urlArtifact,
} from "./artifacts.ts";

/** One content item: its `type` says which of its fields are there (text, data and mimeType, resource, uri). */
type Content = { type: string; [field: string]: unknown };

/**
 * An MCP `tools/call` result as a griptape artifact (docs/behaviour.md, Tool runs): `isError` → ErrorArtifact with the
 * result's text; `structuredContent` → JsonArtifact of it (its `content` repeats it as text); otherwise each content
 * item as an artifact, several as a ListArtifact.
 */
export function artifactOfMcpResult(result: CallToolResult): { artifact: Artifact; isError: boolean } {
  const content = (result.content ?? []) as Content[];
  if (result.isError) {
    const text = content
      .flatMap((item) => (item.type === "text" && typeof item.text === "string" ? [item.text] : []))
      .join("\n");
    return { artifact: errorArtifact(text || "the tool reported an error without a message"), isError: true };
  }
  if (result.structuredContent !== undefined)
    return { artifact: jsonArtifact(result.structuredContent), isError: false };
  return { artifact: oneArtifact(content.map(artifactOfContent)), isError: false };
}

function artifactOfContent(item: Content): Artifact {
  switch (item.type) {
    case "text":
      return artifactOfText(String(item.text));
    case "image":
      return imageArtifact(String(item.data), item.mimeType as string | undefined);
    case "audio":
      return blobArtifact(String(item.data), item.mimeType as string | undefined);
    case "resource": {
      const resource = item.resource as { text?: string; blob?: string; mimeType?: string };
      if (typeof resource.text === "string") return artifactOfText(resource.text);
      if (resource.mimeType?.startsWith("image/")) return imageArtifact(String(resource.blob), resource.mimeType);
      return blobArtifact(String(resource.blob), resource.mimeType);
    }
    case "resource_link":
      return urlArtifact(String(item.uri));
    default:
      // A content kind newer than this code: kept, as JSON, rather than dropped.
      return textArtifact(JSON.stringify(item));
  }
}
