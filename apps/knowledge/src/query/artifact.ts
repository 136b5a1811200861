import type { IndexedChunk, KnowledgeScope } from "../index/port.ts";

/**
 * A chunk as griptape's TextArtifact serialized by `to_json()` (keys `type`, `id`, `reference`, `meta`, `name`,
 * `value`): griptape's `Entry.to_artifact()` parses `meta.artifact` with `BaseArtifact.from_json`, which wants a
 * string of exactly this shape. Its `meta` says where the text came from: the asset (bucket id and name) and the
 * chunk's place in it (docs/api.md, "Querying knowledge bases").
 */
export function chunkArtifactJson(scope: KnowledgeScope, chunk: IndexedChunk): string {
  const { index, start, end, headings } = chunk.position;
  return JSON.stringify({
    type: "TextArtifact",
    id: chunk.id,
    reference: null,
    meta: {
      knowledge_base_id: scope.knowledgeBaseId,
      bucket_id: chunk.bucketId,
      asset_name: chunk.path,
      chunk_index: index,
      start: start ?? null,
      end: end ?? null,
      headings: headings ?? [],
    },
    name: chunk.path,
    value: chunk.text,
  });
}
