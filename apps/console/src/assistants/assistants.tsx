import { useState } from "preact/hooks";
import { NameForm } from "../ui/name-form.tsx";
import { PagedItems } from "../ui/paged-items.tsx";
import { usePagedList } from "../ui/use-paged-list.ts";
import { createAssistant, listAssistants } from "./api.ts";

/** The organization's assistants, a page at a time (newest first, as the API lists them), and a form to add one. */
export function Assistants({ apiKey }: { apiKey: string }) {
  const { list, error, setPage, reload } = usePagedList((page, size) => listAssistants(apiKey, page, size), [apiKey]);
  const [creating, setCreating] = useState(false);

  return (
    <section aria-labelledby="assistants-heading">
      <h1 id="assistants-heading">Assistants</h1>
      {creating ? (
        <NameForm
          formLabel="New assistant"
          fieldId="assistant-name"
          onSubmit={(name) => createAssistant(apiKey, name)}
          onDone={() => {
            setCreating(false);
            reload();
          }}
          onCancel={() => setCreating(false)}
        />
      ) : (
        <button type="button" onClick={() => setCreating(true)}>
          New assistant
        </button>
      )}
      <PagedItems
        label="Assistants"
        page={list && { items: list.assistants, pagination: list.pagination }}
        error={error}
        empty="No assistants yet."
        onPage={setPage}
        item={(assistant) => (
          <li key={assistant.assistant_id}>
            {/* Text, never markup: a name is whatever its author typed. */}
            <a class="name" href={`/console/assistants/${assistant.assistant_id}`}>
              {assistant.name}
            </a>
            {assistant.description && <span class="description">{assistant.description}</span>}
          </li>
        )}
      />
    </section>
  );
}
