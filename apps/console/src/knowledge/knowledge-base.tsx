import { useEffect, useState } from "preact/hooks";
import { messageOf } from "../api/request.ts";
import { ErrorNote } from "../ui/error-note.tsx";
import { getKnowledgeBase, type KnowledgeBase, updateKnowledgeBase } from "./api.ts";
import { IngestJobs } from "./ingest-jobs.tsx";
import { KnowledgeBaseForm } from "./knowledge-base-form.tsx";
import { KnowledgeQuery } from "./knowledge-query.tsx";
import { readablePath, useBuckets } from "./use-buckets.ts";

/** One knowledge base: what it reads (editable), its ingest jobs, and a query box. */
export function KnowledgeBasePage({ apiKey, knowledgeBaseId }: { apiKey: string; knowledgeBaseId: string }) {
  const [kb, setKb] = useState<KnowledgeBase | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState(false);
  const { buckets } = useBuckets(apiKey);

  useEffect(() => {
    getKnowledgeBase(apiKey, knowledgeBaseId).then(setKb, (e) => setError(messageOf(e)));
  }, [apiKey, knowledgeBaseId]);

  return (
    <section aria-labelledby="knowledge-base-heading">
      <p>
        <a href="/console/knowledge">All knowledge bases</a>
      </p>
      <h1 id="knowledge-base-heading">{kb ? kb.name : "Knowledge base"}</h1>
      <ErrorNote error={error} />
      {!kb && !error && <p>Loading the knowledge base…</p>}
      {kb &&
        (editing ? (
          <KnowledgeBaseForm
            apiKey={apiKey}
            formLabel={`Edit ${kb.name}`}
            submitLabel="Save"
            initial={kb}
            onSubmit={async (fields) => setKb(await updateKnowledgeBase(apiKey, knowledgeBaseId, fields))}
            onDone={() => setEditing(false)}
            onCancel={() => setEditing(false)}
          />
        ) : (
          <>
            {kb.description && <p class="description">{kb.description}</p>}
            <dl class="details">
              <dt>Files it reads</dt>
              <dd>
                {kb.asset_paths.length > 0
                  ? kb.asset_paths.map((path) => readablePath(path, buckets)).join(", ")
                  : "none yet"}
              </dd>
              <dt>Embedding model</dt>
              <dd>{kb.config.gtc_pg_vector.embedding_model ?? "none: searched by keywords only"}</dd>
            </dl>
            <button type="button" onClick={() => setEditing(true)}>
              Edit
            </button>
          </>
        ))}
      <IngestJobs apiKey={apiKey} knowledgeBaseId={knowledgeBaseId} />
      <KnowledgeQuery apiKey={apiKey} knowledgeBaseId={knowledgeBaseId} />
    </section>
  );
}
