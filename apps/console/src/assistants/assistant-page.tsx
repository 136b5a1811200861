import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { messageOf } from "../api/request.ts";
import { runsScreenUrl } from "../runs/api.ts";
import { ConfirmButton } from "../ui/confirm-button.tsx";
import { ErrorNote } from "../ui/error-note.tsx";
import { type Assistant, deleteAssistant, getAssistant } from "./api.ts";
import { AssistantForm } from "./assistant-form.tsx";

/** One assistant (`/console/assistants/<id>`, shareable): its edit form, links to chat with it and to its runs, delete. */
export function AssistantPage({ apiKey, assistantId }: { apiKey: string; assistantId: string }) {
  const [assistant, setAssistant] = useState<Assistant | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const { route } = useLocation();

  useEffect(() => {
    getAssistant(apiKey, assistantId).then(setAssistant, (e) => setLoadError(messageOf(e)));
  }, [apiKey, assistantId]);

  const query = `?assistant=${encodeURIComponent(assistantId)}`;
  return (
    <section aria-labelledby="assistant-heading">
      <p>
        <a href="/console/assistants">All assistants</a>
      </p>
      {/* Text, never markup: a name is whatever its author typed. */}
      <h1 id="assistant-heading">{assistant ? assistant.name : "Assistant"}</h1>
      <ErrorNote error={loadError} />
      {!assistant && !loadError && <p>Loading the assistant…</p>}
      {assistant && (
        <>
          <p class="actions">
            <a href={`/console/chat${query}`} aria-label={`Chat with ${assistant.name}`}>
              Chat
            </a>
            <a href={runsScreenUrl(assistantId)} aria-label={`Runs of ${assistant.name}`}>
              Runs
            </a>
          </p>
          <AssistantForm apiKey={apiKey} assistant={assistant} onSaved={setAssistant} />
          <ConfirmButton
            verb="Delete"
            what={assistant.name}
            question="Delete this assistant? Its runs stay readable; this cannot be undone."
            onConfirm={async () => {
              await deleteAssistant(apiKey, assistantId);
              route("/console/assistants");
            }}
          />
        </>
      )}
    </section>
  );
}
