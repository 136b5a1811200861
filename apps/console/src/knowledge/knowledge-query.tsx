import { useState } from "preact/hooks";
import { ErrorNote } from "../ui/error-note.tsx";
import { useAction } from "../ui/use-action.ts";
import { type KnowledgeBaseQuery, type QueryEntry, queryKnowledgeBase } from "./api.ts";

/** What a hit shows of griptape's TextArtifact: the chunk's text, its file and where in it. */
interface Chunk {
  text: string;
  file: string;
  index: number | null;
  start: number | null;
  end: number | null;
}

/** A hit's `meta.artifact` read; one that is not the JSON expected is shown as it came. */
export function chunkOf(entry: QueryEntry): Chunk {
  try {
    const artifact = JSON.parse(entry.meta.artifact) as {
      name?: string;
      value?: string;
      meta?: { asset_name?: string; chunk_index?: number; start?: number | null; end?: number | null };
    };
    return {
      text: String(artifact.value ?? ""),
      file: artifact.meta?.asset_name ?? artifact.name ?? "",
      index: artifact.meta?.chunk_index ?? null,
      start: artifact.meta?.start ?? null,
      end: artifact.meta?.end ?? null,
    };
  } catch {
    return { text: entry.meta.artifact, file: "", index: null, start: null, end: null };
  }
}

const position = ({ index, start, end }: Chunk) =>
  [index === null ? null : `chunk ${index + 1}`, start === null || end === null ? null : `characters ${start}–${end}`]
    .filter(Boolean)
    .join(", ");

/** The query box: a question, and the chunks that answer it best, first, with their files and scores. */
export function KnowledgeQuery({ apiKey, knowledgeBaseId }: { apiKey: string; knowledgeBaseId: string }) {
  const [query, setQuery] = useState("");
  const [answer, setAnswer] = useState<KnowledgeBaseQuery | null>(null);
  const { busy, error, run } = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    await run(async () => setAnswer(await queryKnowledgeBase(apiKey, knowledgeBaseId, query)));
  };

  return (
    <section aria-labelledby="query-heading">
      <h2 id="query-heading">Search this knowledge base</h2>
      <form onSubmit={submit} aria-label="Query the knowledge base">
        <label for="kb-query">Query</label>
        <input id="kb-query" required value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        <button type="submit" disabled={busy}>
          Search
        </button>
        <ErrorNote error={error} />
      </form>
      {answer && answer.entries.length === 0 && <p>Nothing found.</p>}
      {answer && answer.entries.length > 0 && (
        <>
          <p class="description">
            {answer.mode === "hybrid" ? "Keyword and embedding search" : "Keyword search"}, best first:
          </p>
          <ol aria-label="Hits" class="hits">
            {answer.entries.map((entry) => {
              const chunk = chunkOf(entry);
              return (
                <li key={entry.id}>
                  {/* Text, never markup: a chunk is whatever the file held. */}
                  <span class="name">{chunk.file}</span>
                  <span class="description">{position(chunk)}</span>
                  <span>score {entry.score.toPrecision(3)}</span>
                  <p class="chunk">{chunk.text}</p>
                </li>
              );
            })}
          </ol>
        </>
      )}
    </section>
  );
}
