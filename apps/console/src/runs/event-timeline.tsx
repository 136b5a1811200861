import { useMemo, useState } from "preact/hooks";
import type { RunEvent } from "../api/event-stream.ts";
import { rowSummary, type TimelineRow, timelineRows } from "./timeline.ts";

/**
 * A run's events as they arrive, oldest first: each row its type, origin, time
 * and a short summary, the payload JSON behind a disclosure. A `log` region,
 * so a screen reader hears new rows as they come. Everything is text: a
 * payload holds model output and user input, never markup to run.
 */
export function EventTimeline({ events }: { events: { event: RunEvent; offset: number }[] }) {
  const rows = useMemo(() => timelineRows(events), [events]);
  return (
    <div role="log" aria-label="Events">
      <ol class="timeline">
        {rows.map((row) => (
          <EventRow key={row.offset} row={row} />
        ))}
      </ol>
    </div>
  );
}

function EventRow({ row }: { row: TimelineRow }) {
  const first = row.events[0]!;
  const merged = row.events.length > 1;
  const summary = rowSummary(row);
  const [open, setOpen] = useState(false);
  return (
    <li>
      <span class="event-type">
        {first.type}
        {merged && ` ×${row.events.length}`}
      </span>
      <span class="description">{first.origin}</span>
      <time class="description" dateTime={first.created_at}>
        {new Date(first.created_at).toLocaleTimeString()}
      </time>
      {summary && <span class="event-summary">{summary}</span>}
      {/* The JSON is made only while open: a merged row of thousands of chunks re-renders with each new one. */}
      <details onToggle={(e) => setOpen(e.currentTarget.open)}>
        <summary>{merged ? "Payloads" : "Payload"}</summary>
        {open && <pre>{JSON.stringify(merged ? row.events.map((e) => e.payload) : first.payload, null, 2)}</pre>}
      </details>
    </li>
  );
}
