import { chunkIndexText } from "@loom/knowledge/documents/chunk";
import { documentChunks } from "@loom/knowledge/documents/documents";
import type { ChunkIndex, KnowledgeScope, NewChunk } from "@loom/knowledge/index/port";
import type { CorpusDocument } from "@loom/testing/retrieval/corpus";
import { embed } from "./knowledge-baselines.ts";
import type { LocalEmbeddings } from "./knowledge-retrieval.ts";

/** A corpus document's file name (its id is its name without the extension), as ingest would read it from a bucket. */
export const corpusFileName = (doc: CorpusDocument): string =>
  `${doc.id}.${{ "text/markdown": "md", "text/html": "html", "text/plain": "txt" }[doc.mediaType]}`;

/** The document id of a file name given by corpusFileName. */
export const corpusDocumentId = (fileName: string): string => fileName.replace(/\.[a-z]+$/, "");

/** Where a chunk's vector comes from: the local server's model, or a function (the latency bench's random ones). */
export type ChunkVectors = LocalEmbeddings | ((texts: string[]) => Float32Array[]);

/**
 * Puts the corpus into a knowledge base of the index, as ingest does: each document chunked by the knowledge
 * service's own chunker, the text to index embedded (with `embeddings`) by the local server in batches, written
 * through the index's port: the ingest benchmark's baseline (what a job must do at the least, in one process).
 * Returns how many chunks were written, and their vectors when there are any.
 */
export async function indexCorpus(
  index: ChunkIndex,
  scope: KnowledgeScope,
  documents: readonly CorpusDocument[],
  embeddings?: ChunkVectors,
): Promise<{ chunks: number; vectors: Float32Array[] }> {
  const written: Float32Array[] = [];
  let count = 0;
  for (const doc of documents) {
    const name = corpusFileName(doc);
    const chunks: NewChunk[] = [];
    for await (const c of documentChunks({
      name,
      contentType: doc.mediaType,
      bytes: new TextEncoder().encode(doc.content),
    }))
      chunks.push({ text: c.text, position: { index: c.index, start: c.start, end: c.end, headings: c.headingPath } });
    if (embeddings) {
      const texts = chunks.map((c) => chunkIndexText({ text: c.text, headingPath: c.position.headings ?? [] }));
      const vectors =
        typeof embeddings === "function" ? embeddings(texts) : await embed(embeddings.url, embeddings.model, texts);
      chunks.forEach((c, i) => {
        c.embedding = vectors[i];
      });
      written.push(...vectors);
    }
    await index.replaceAsset(scope, { bucketId: scope.knowledgeBaseId, path: name, version: "1" }, chunks, new Date());
    count += chunks.length;
  }
  return { chunks: count, vectors: written };
}
