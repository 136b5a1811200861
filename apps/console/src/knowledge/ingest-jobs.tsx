import { useEffect, useState } from "preact/hooks";
import { messageOf } from "../api/request.ts";
import { ErrorNote } from "../ui/error-note.tsx";
import { PagedItems } from "../ui/paged-items.tsx";
import { useAction } from "../ui/use-action.ts";
import { usePagedList } from "../ui/use-paged-list.ts";
import {
  cancelKnowledgeBaseJob,
  createKnowledgeBaseJob,
  getKnowledgeBaseJob,
  type KnowledgeBaseJob,
  listKnowledgeBaseJobs,
} from "./api.ts";

const finished = (job: KnowledgeBaseJob) => ["SUCCEEDED", "FAILED", "CANCELLED"].includes(job.status);

/** How often a running job is asked for its progress. */
const pollMs = 500;

/**
 * Ingesting: "Ingest" starts a job, whose progress is asked for until it ends
 * (a job already running when the page opens is followed too), with "Cancel"
 * while it runs; below, the recent jobs.
 */
export function IngestJobs({ apiKey, knowledgeBaseId }: { apiKey: string; knowledgeBaseId: string }) {
  const { view, items, reload } = usePagedList(
    "knowledge_base_jobs",
    (page, size) => listKnowledgeBaseJobs(apiKey, knowledgeBaseId, page, size),
    [apiKey, knowledgeBaseId],
  );
  const [current, setCurrent] = useState<KnowledgeBaseJob | null>(null);
  const [pollError, setPollError] = useState<string | null>(null);
  const start = useAction();
  const cancel = useAction();

  const newest = items?.[0];
  useEffect(() => {
    if (!current && newest && !finished(newest)) setCurrent(newest);
  }, [newest]);

  useEffect(() => {
    if (!current) return;
    if (finished(current)) {
      reload();
      return;
    }
    const timer = setTimeout(() => {
      getKnowledgeBaseJob(apiKey, current.knowledge_base_job_id).then(setCurrent, (e) => setPollError(messageOf(e)));
    }, pollMs);
    return () => clearTimeout(timer);
  }, [current]);

  const running = current !== null && !finished(current);
  return (
    <section aria-labelledby="ingest-heading">
      <h2 id="ingest-heading">Ingest</h2>
      <p>Ingesting reads the files the knowledge base names and indexes what changed since the last time.</p>
      <span class="actions">
        <button
          type="button"
          disabled={start.busy || running}
          onClick={() =>
            void start.run(async () => {
              setPollError(null);
              setCurrent(await createKnowledgeBaseJob(apiKey, knowledgeBaseId));
            })
          }
        >
          Ingest
        </button>
        {running && (
          <button
            type="button"
            disabled={cancel.busy}
            onClick={() =>
              void cancel.run(async () =>
                setCurrent(await cancelKnowledgeBaseJob(apiKey, current.knowledge_base_job_id)),
              )
            }
          >
            Cancel
          </button>
        )}
      </span>
      <ErrorNote error={start.error} />
      <ErrorNote error={cancel.error} />
      <ErrorNote error={pollError} />
      {current && (
        <div role="status" aria-label="Ingest progress" class="job">
          <JobSummary job={current} />
        </div>
      )}
      <h3>Recent jobs</h3>
      <PagedItems
        label="Ingest jobs"
        {...view}
        empty="Not ingested yet."
        item={(job) => (
          <li key={job.knowledge_base_job_id}>
            <JobSummary job={job} />
          </li>
        )}
      />
    </section>
  );
}

/** A job's status, bytes read, why it ended (when not well) and the files it went past. */
function JobSummary({ job }: { job: KnowledgeBaseJob }) {
  return (
    <>
      <span class="name">{job.status}</span>
      <span>{job.bytes_ingested.toLocaleString()} bytes ingested</span>
      <span class="description">started {new Date(job.created_at).toLocaleString()}</span>
      {job.status_detail && <span class="error">{job.status_detail}</span>}
      {job.errors.length > 0 && (
        <ul aria-label="Files not ingested" class="job-errors">
          {job.errors.map((e) => (
            <li key={e.path}>
              {/* Text: a path holds a file's name, whatever its uploader chose. */}
              <code>{e.path}</code>: {e.message}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
