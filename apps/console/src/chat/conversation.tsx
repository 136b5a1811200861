import { segment } from "../api/request.ts";
import type { ApprovalCall } from "../runs/api.ts";
import { runScreenUrl } from "../runs/api.ts";
import { ApprovalForm } from "./approval-form.tsx";
import type { ToolCall, Turn } from "./turn.ts";

/**
 * The conversation, in a `log` region: new turns are announced politely, and
 * while an answer streams the region is `aria-busy`, so that a screen reader
 * reads the answer once whole rather than token by token (not while a run
 * waits for an approval: the question is read at once). Every text from a
 * person or a model is a JSX text node: shown as written, never parsed as markup.
 */
export function Conversation({ apiKey, turns, loading }: { apiKey: string; turns: Turn[]; loading: boolean }) {
  const streaming = turns.some((turn) => turn.running && !turn.approvals.some((call) => !call.decision));
  return (
    <div role="log" aria-label="Conversation" aria-busy={streaming} class="log">
      {loading && <p>Loading the conversation…</p>}
      {!loading && turns.length === 0 && <p>No messages yet: send one to start the conversation.</p>}
      {turns.map((turn) => (
        <TurnView key={turn.key} apiKey={apiKey} turn={turn} />
      ))}
    </div>
  );
}

function TurnView({ apiKey, turn }: { apiKey: string; turn: Turn }) {
  return (
    <div class="turn">
      <p class="said">
        <span class="who">You</span>
        <span class="text">{turn.input}</span>
      </p>
      {turn.runId &&
        turn.approvals.map((call) => (
          <ApprovalView key={call.call_id} apiKey={apiKey} runId={turn.runId!} call={call} />
        ))}
      {turn.toolCalls.length > 0 && (
        <ul class="tool-calls" aria-label="Tool calls">
          {turn.toolCalls.map((call) => (
            <ToolCallView key={call.tag} call={call} />
          ))}
        </ul>
      )}
      <p class="said answer">
        <span class="who">Assistant</span>
        <span class="text">{turn.answer || (turn.running ? "…" : "")}</span>
      </p>
      {turn.error && <p class="error">{turn.error}</p>}
      {turn.citations.length > 0 && (
        <div class="citations">
          <span id={`sources-${turn.key}`}>Sources</span>
          <ul aria-labelledby={`sources-${turn.key}`}>
            {turn.citations.map((c) => (
              <li key={`${c.knowledge_base_id} ${c.asset_name} ${c.chunk_index}`}>
                <a href={`/console/files/${segment(c.bucket_id)}`}>{c.asset_name}</a>
                <span class="description">
                  {" "}
                  passage {c.chunk_index + 1}, score {Number(c.score.toPrecision(2))}
                </span>
              </li>
            ))}
          </ul>
        </div>
      )}
      {turn.runId && (
        <p class="details">
          <a href={runScreenUrl(turn.runId)}>Run details</a>
          {turn.running && <span class="description"> (running)</span>}
        </p>
      )}
    </div>
  );
}

/** Inputs and results as JSON text, as the tool got and gave them. */
const asText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

function ToolCallView({ call }: { call: ToolCall }) {
  return (
    <li>
      <span class="name">
        {call.tool} {call.activity}
      </span>{" "}
      <code>{asText(call.input)}</code>
      {call.result === undefined ? (
        <span class="description"> running…</span>
      ) : (
        <>
          <span class={call.failed ? "error" : "description"}>{call.failed ? " failed: " : " gave: "}</span>
          <code>{call.result}</code>
        </>
      )}
    </li>
  );
}

function ApprovalView({ apiKey, runId, call }: { apiKey: string; runId: string; call: ApprovalCall }) {
  const what = `${call.tool} ${call.activity}`;
  if (call.decision)
    return (
      <p class="approval">
        {call.decision.approved ? "Approved" : "Denied"}: {what} <code>{asText(call.input)}</code>
        {call.decision.reason && ` (${call.decision.reason})`}
      </p>
    );
  return <ApprovalForm apiKey={apiKey} runId={runId} call={call} what={what} input={asText(call.input)} />;
}
