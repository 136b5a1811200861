import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import {
  type ApiKey,
  type ApiKeyPage,
  createOrganizationApiKey,
  keyOrganization,
  listOrganizationApiKeys,
  messageOf,
  renameApiKey,
  revokeApiKey,
} from "./api.ts";
import { Pages } from "./pages.tsx";

const pageSize = 20;

/**
 * The organization's API keys, a page at a time: create (the value shown once,
 * held in this screen's state only, so leaving the screen forgets it), rename,
 * revoke after a confirmation.
 */
export function ApiKeys({ apiKey }: { apiKey: string }) {
  const [organizationId, setOrganizationId] = useState<string | null>(null);
  const [page, setPage] = useState(1);
  const [list, setList] = useState<ApiKeyPage | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [created, setCreated] = useState<{ name: string; value: string } | null>(null);

  useEffect(() => {
    keyOrganization(apiKey).then(setOrganizationId, (e) => setError(messageOf(e)));
  }, [apiKey]);

  const load = useCallback(async () => {
    if (!organizationId) return;
    setError(null);
    try {
      setList(await listOrganizationApiKeys(apiKey, organizationId, page, pageSize));
    } catch (e) {
      setError(messageOf(e));
    }
  }, [apiKey, organizationId, page]);
  useEffect(() => void load(), [load]);

  const reload = () => {
    if (page === 1) void load();
    else setPage(1);
  };

  return (
    <section aria-labelledby="api-keys-heading">
      <h1 id="api-keys-heading">API keys</h1>
      {organizationId && (
        <NewApiKey
          apiKey={apiKey}
          organizationId={organizationId}
          onCreated={(key) => {
            setCreated(key);
            reload();
          }}
        />
      )}
      {created && <CreatedKey name={created.name} value={created.value} onDone={() => setCreated(null)} />}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {!list && !error && <p>Loading API keys…</p>}
      {list && list.api_keys.length === 0 && <p>No API keys yet.</p>}
      {list && list.api_keys.length > 0 && (
        <>
          <ul class="items" aria-label="API keys">
            {list.api_keys.map((key) => (
              <KeyItem key={key.api_key_id} apiKey={apiKey} item={key} onChanged={() => void load()} />
            ))}
          </ul>
          <Pages pagination={list.pagination} onPage={setPage} />
        </>
      )}
    </section>
  );
}

function NewApiKey({
  apiKey,
  organizationId,
  onCreated,
}: {
  apiKey: string;
  organizationId: string;
  onCreated: (key: { name: string; value: string }) => void;
}) {
  const [name, setName] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const key = await createOrganizationApiKey(apiKey, organizationId, name);
      setName("");
      onCreated({ name: key.name, value: key.value });
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} aria-label="New API key">
      <label for="api-key-name">Name</label>
      <input id="api-key-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <button type="submit" disabled={busy}>
        Create
      </button>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </form>
  );
}

/** The one time a key's value is shown: the API answers it only when the key is created. */
function CreatedKey({ name, value, onDone }: { name: string; value: string; onDone: () => void }) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied("Copied.");
    } catch (e) {
      setCopied(`Not copied: ${messageOf(e)}`);
    }
  };
  return (
    <section class="created" aria-label="New key's value">
      <p>
        The key <span class="name">{name}</span> was created. Copy its value now: it is not shown again.
      </p>
      <code class="secret">{value}</code>
      <button type="button" onClick={copy}>
        Copy
      </button>
      <button type="button" onClick={onDone}>
        Done
      </button>
      <span role="status">{copied}</span>
    </section>
  );
}

/** One key: its name and dates, and the forms to rename it and to revoke it (which asks first). */
function KeyItem({ apiKey, item, onChanged }: { apiKey: string; item: ApiKey; onChanged: () => void }) {
  const [mode, setMode] = useState<"show" | "rename" | "revoke">("show");
  const [name, setName] = useState(item.name);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The form or question replaces the button that opened it: the focus moves there, to the safe choice when revoking.
  const renameField = useRef<HTMLInputElement>(null);
  const keepButton = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (mode === "rename") renameField.current?.focus();
    if (mode === "revoke") keepButton.current?.focus();
  }, [mode]);

  const act = async (work: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await work();
      setMode("show");
      onChanged();
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };
  const fieldId = `rename-${item.api_key_id}`;

  return (
    <li>
      {/* Text, never markup: a name is whatever its author typed. */}
      <span class="name">{item.name}</span>
      <span class="description">
        created {new Date(item.created_at).toLocaleString()}, last used {new Date(item.last_used).toLocaleString()}
      </span>
      {mode === "show" && (
        <span class="actions">
          <button type="button" aria-label={`Rename ${item.name}`} onClick={() => setMode("rename")}>
            Rename
          </button>
          <button type="button" aria-label={`Revoke ${item.name}`} onClick={() => setMode("revoke")}>
            Revoke
          </button>
        </span>
      )}
      {mode === "rename" && (
        <form
          aria-label={`Rename ${item.name}`}
          onSubmit={(event) => {
            event.preventDefault();
            void act(() => renameApiKey(apiKey, item.api_key_id, name));
          }}
        >
          <label for={fieldId}>New name</label>
          <input ref={renameField} id={fieldId} required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <button type="submit" disabled={busy}>
            Save
          </button>
          <button type="button" onClick={() => setMode("show")}>
            Cancel
          </button>
        </form>
      )}
      {mode === "revoke" && (
        <fieldset aria-label={`Revoke ${item.name}?`} class="confirm">
          <span>Revoke this key? Requests with it are refused at once; this cannot be undone.</span>
          <button type="button" disabled={busy} onClick={() => void act(() => revokeApiKey(apiKey, item.api_key_id))}>
            Yes, revoke
          </button>
          <button ref={keepButton} type="button" onClick={() => setMode("show")}>
            Cancel
          </button>
        </fieldset>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </li>
  );
}
