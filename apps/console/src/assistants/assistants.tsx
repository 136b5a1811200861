import { NameForm } from "../ui/name-form.tsx";
import { OpensForm } from "../ui/opens-form.tsx";
import { PagedItems } from "../ui/paged-items.tsx";
import { usePagedList } from "../ui/use-paged-list.ts";
import { createAssistant, listAssistants } from "./api.ts";

/** The organization's assistants, a page at a time (newest first, as the API lists them), and a form to add one. */
export function Assistants({ apiKey }: { apiKey: string }) {
  const { view, reload } = usePagedList("assistants", (page, size) => listAssistants(apiKey, page, size), [apiKey]);

  return (
    <section aria-labelledby="assistants-heading">
      <h1 id="assistants-heading">Assistants</h1>
      <OpensForm label="New assistant" onDone={reload}>
        {(form) => <NameForm {...form} fieldId="assistant-name" onSubmit={(name) => createAssistant(apiKey, name)} />}
      </OpensForm>
      <PagedItems
        label="Assistants"
        {...view}
        empty="No assistants yet."
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
