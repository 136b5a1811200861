import { useEffect, useRef, useState } from "preact/hooks";
import { followEvents, type RunEvent } from "../api/event-stream.ts";
import { messageOf } from "../api/request.ts";
import { ErrorNote } from "../ui/error-note.tsx";
import { useAction } from "../ui/use-action.ts";
import {
  type AssistantRun,
  cancelAssistantRun,
  getAssistantRun,
  isTerminal,
  runEventsPath,
  runsScreenUrl,
} from "./api.ts";
import { EventTimeline } from "./event-timeline.tsx";

/**
 * One run (a shareable URL): its status, input and output, and its events as
 * a live timeline. The event stream replays the whole log, then follows it
 * live until the server closes it after the terminal event; each lifecycle
 * event (and that end) reads the run again, so status and output stay current
 * without reloading.
 */
export function Run({ apiKey, runId }: { apiKey: string; runId: string }) {
  const [run, setRun] = useState<AssistantRun | null>(null);
  const [runError, setRunError] = useState<string | null>(null);
  const [events, setEvents] = useState<{ event: RunEvent; offset: number }[]>([]);
  const [streamError, setStreamError] = useState<string | null>(null);
  const [changes, setChanges] = useState(0);
  const reads = useRef(0);
  const cancel = useAction();

  useEffect(() => {
    const stop = new AbortController();
    setEvents([]);
    followEvents(
      apiKey,
      runEventsPath(runId),
      (event, offset) => {
        setEvents((shown) => [...shown, { event, offset }]);
        if (event.type.startsWith("AssistantRun") && typeof event.payload?.status === "string")
          setChanges((n) => n + 1);
      },
      stop.signal,
    ).then(
      () => setChanges((n) => n + 1),
      (e) => setStreamError(messageOf(e)),
    );
    return () => stop.abort();
  }, [apiKey, runId]);

  // Several lifecycle events replayed at once make one change (renders batch); the newest read wins.
  useEffect(() => {
    const read = ++reads.current;
    getAssistantRun(apiKey, runId).then(
      (fresh) => {
        if (read !== reads.current) return;
        setRun(fresh);
        setRunError(null);
      },
      (e) => read === reads.current && setRunError(messageOf(e)),
    );
  }, [apiKey, runId, changes]);

  const cancelRun = () =>
    cancel.run(async () => {
      const cancelled = await cancelAssistantRun(apiKey, runId);
      reads.current++; // A read still under way may answer the run as it was before the cancel.
      setRun(cancelled);
    });

  return (
    <section aria-labelledby="run-heading">
      {run && (
        <p>
          <a href={runsScreenUrl(run.assistant_id)}>Runs of this assistant</a>
        </p>
      )}
      <h1 id="run-heading">Run</h1>
      <ErrorNote error={runError} />
      {!run && !runError && <p>Loading the run…</p>}
      {run && <RunDetails run={run} />}
      {run && !isTerminal(run.status) && (
        <button type="button" disabled={cancel.busy} onClick={() => void cancelRun()}>
          Cancel run
        </button>
      )}
      <ErrorNote error={cancel.error} />
      <h2>Events</h2>
      {/* An unknown run fails both reads: say it once. */}
      <ErrorNote error={runError ? null : streamError} />
      <EventTimeline events={events} />
    </section>
  );
}

function RunDetails({ run }: { run: AssistantRun }) {
  const output = run.output?.value;
  const detail = run.status_detail;
  return (
    <dl class="run-details">
      <dt>Status</dt>
      <dd>
        {/* A status region: a screen reader hears it change as the run goes on. */}
        <span role="status" class="run-status">
          {run.status}
        </span>
        {detail && <span class="description"> ({detail.message ?? detail.reason})</span>}
      </dd>
      <dt>Created</dt>
      <dd>
        <time dateTime={run.created_at}>{new Date(run.created_at).toLocaleString()}</time>
      </dd>
      <dt>Input</dt>
      <dd class="run-text">{run.input ?? "(none: the assistant's own input or the run's args)"}</dd>
      <dt>Output</dt>
      <dd class="run-text">
        {output === undefined || output === null
          ? isTerminal(run.status)
            ? "(none)"
            : "(not yet)"
          : typeof output === "string"
            ? output
            : JSON.stringify(output)}
      </dd>
    </dl>
  );
}
