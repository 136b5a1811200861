import { useEffect, useState } from "preact/hooks";
import { messageOf } from "../api/request.ts";
import { type Assistant, listAssistants } from "../assistants/api.ts";
import { ErrorNote } from "../ui/error-note.tsx";

/** The most a select offers: the API's largest page, newest first. */
const offered = 100;

/** A select labelled "Assistant" of the organization's newest assistants; `value` is kept even when not among them (a shared link). */
export function AssistantPicker({
  apiKey,
  value,
  onChange,
}: {
  apiKey: string;
  value: string;
  onChange: (assistantId: string) => void;
}) {
  const [assistants, setAssistants] = useState<Assistant[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    listAssistants(apiKey, 1, offered).then(
      (page) => setAssistants(page.assistants),
      (e) => setError(messageOf(e)),
    );
  }, [apiKey]);

  if (error) return <ErrorNote error={error} />;
  if (!assistants) return <p>Loading assistants…</p>;
  if (assistants.length === 0)
    return (
      <p>
        No assistants yet: make one on the <a href="/console/assistants">Assistants</a> screen.
      </p>
    );
  const known = assistants.some((a) => a.assistant_id === value);
  return (
    <p class="picker">
      <label for="chat-assistant">Assistant</label>
      <select id="chat-assistant" value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">Choose an assistant</option>
        {value && !known && <option value={value}>{value}</option>}
        {assistants.map((a) => (
          <option key={a.assistant_id} value={a.assistant_id}>
            {a.name}
          </option>
        ))}
      </select>
    </p>
  );
}
