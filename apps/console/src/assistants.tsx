import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { type Assistant, createAssistant, listAssistants, type Pagination } from "./api.ts";
import { Pages } from "./pages.tsx";

const pageSize = 20;

/** The organization's assistants, a page at a time (newest first, as the API lists them), and a form to add one. */
export function Assistants({ apiKey }: { apiKey: string }) {
  const [page, setPage] = useState(1);
  const [list, setList] = useState<{ assistants: Assistant[]; pagination: Pagination } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);

  const load = useCallback(async () => {
    setError(null);
    try {
      setList(await listAssistants(apiKey, page, pageSize));
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  }, [apiKey, page]);
  useEffect(() => void load(), [load]);

  const created = () => {
    setCreating(false);
    if (page === 1) void load();
    else setPage(1);
  };

  return (
    <section aria-labelledby="assistants-heading">
      <h1 id="assistants-heading">Assistants</h1>
      {creating ? (
        <NewAssistant apiKey={apiKey} onCreated={created} onCancel={() => setCreating(false)} />
      ) : (
        <button type="button" onClick={() => setCreating(true)}>
          New assistant
        </button>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {!list && !error && <p>Loading assistants…</p>}
      {list && list.assistants.length === 0 && <p>No assistants yet.</p>}
      {list && list.assistants.length > 0 && (
        <>
          <ul class="items" aria-label="Assistants">
            {list.assistants.map((assistant) => (
              <li key={assistant.assistant_id}>
                {/* Text, never markup: a name is whatever its author typed. */}
                <span class="name">{assistant.name}</span>
                {assistant.description && <span class="description">{assistant.description}</span>}
              </li>
            ))}
          </ul>
          <Pages pagination={list.pagination} onPage={setPage} />
        </>
      )}
    </section>
  );
}

function NewAssistant({
  apiKey,
  onCreated,
  onCancel,
}: {
  apiKey: string;
  onCreated: () => void;
  onCancel: () => void;
}) {
  const [name, setName] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The form replaces the button that opened it: the focus goes to its first field, not back to the page's top.
  const nameField = useRef<HTMLInputElement>(null);
  useEffect(() => nameField.current?.focus(), []);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await createAssistant(apiKey, name);
      onCreated();
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} aria-label="New assistant">
      <label for="assistant-name">Name</label>
      <input
        ref={nameField}
        id="assistant-name"
        required
        value={name}
        onInput={(e) => setName(e.currentTarget.value)}
      />
      <button type="submit" disabled={busy}>
        Create
      </button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </form>
  );
}
