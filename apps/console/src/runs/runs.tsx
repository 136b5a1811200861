import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { messageOf } from "../api/request.ts";
import { type Assistant, listAssistants } from "../assistants/api.ts";
import { ErrorNote } from "../ui/error-note.tsx";
import { PagedItems } from "../ui/paged-items.tsx";
import { usePagedList } from "../ui/use-paged-list.ts";
import { listAssistantRuns, type RunStatus, runScreenUrl, runStatuses, runsScreenUrl } from "./api.ts";

/** The most assistants the API gives in one page: the "Assistant" choice offers these. */
const assistantChoices = 100;

/**
 * The "Runs" screen: one assistant's runs, newest first, a page at a time,
 * narrowed by status on the server. The assistant and the status live in the
 * URL (`?assistant=…&status=…`), so a view can be shared and other screens
 * link straight to it.
 */
export function Runs({ apiKey }: { apiKey: string }) {
  const { query, route } = useLocation();
  const assistantId = query.assistant ?? "";
  const status = runStatuses.find((s) => s === query.status) ?? null;
  const [assistants, setAssistants] = useState<Assistant[] | null>(null);
  const [assistantsError, setAssistantsError] = useState<string | null>(null);

  useEffect(() => {
    listAssistants(apiKey, 1, assistantChoices).then(
      (page) => setAssistants(page.assistants),
      (e) => setAssistantsError(messageOf(e)),
    );
  }, [apiKey]);

  const show = (assistant: string, shownStatus: RunStatus | null) =>
    route(assistant ? runsScreenUrl(assistant, shownStatus) : "/console/runs");

  return (
    <section aria-labelledby="runs-heading">
      <h1 id="runs-heading">Runs</h1>
      <form class="filters" aria-label="Which runs" onSubmit={(e) => e.preventDefault()}>
        <label for="runs-assistant">Assistant</label>
        <select id="runs-assistant" value={assistantId} onChange={(e) => show(e.currentTarget.value, status)}>
          <option value="">Choose an assistant</option>
          {assistants?.map((a) => (
            <option key={a.assistant_id} value={a.assistant_id}>
              {a.name}
            </option>
          ))}
          {/* Linked to an assistant past the first page of choices: still shown, by its id. */}
          {assistantId && assistants && !assistants.some((a) => a.assistant_id === assistantId) && (
            <option value={assistantId}>{assistantId}</option>
          )}
        </select>
        <label for="runs-status">Status</label>
        <select
          id="runs-status"
          value={status ?? ""}
          onChange={(e) => show(assistantId, (e.currentTarget.value || null) as RunStatus | null)}
        >
          <option value="">All</option>
          {runStatuses.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </form>
      <ErrorNote error={assistantsError} />
      {assistantId ? (
        // Keyed by the filter: another assistant or status starts again at page 1.
        <RunList key={`${assistantId} ${status}`} apiKey={apiKey} assistantId={assistantId} status={status} />
      ) : (
        <p>Choose an assistant to see its runs.</p>
      )}
    </section>
  );
}

function RunList({ apiKey, assistantId, status }: { apiKey: string; assistantId: string; status: RunStatus | null }) {
  const { view } = usePagedList(
    "assistant_runs",
    (page, size) => listAssistantRuns(apiKey, assistantId, status ? [status] : [], page, size),
    [apiKey, assistantId, status],
  );
  return (
    <PagedItems
      {...view}
      label="Runs"
      empty={status ? `No ${status} runs of this assistant.` : "No runs of this assistant yet."}
      item={(run) => (
        <li key={run.assistant_run_id}>
          {/* Named by its input, as a person tells runs apart (times repeat). Text, never markup: an input is whatever its caller sent. */}
          <a class="run-input" href={runScreenUrl(run.assistant_run_id)}>
            {run.input || "(no input)"}
          </a>
          <span class="run-status">{run.status}</span>
          <time class="description" dateTime={run.created_at}>
            {new Date(run.created_at).toLocaleString()}
          </time>
        </li>
      )}
    />
  );
}
