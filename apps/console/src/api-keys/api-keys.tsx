import { useEffect, useState } from "preact/hooks";
import { messageOf } from "../api/request.ts";
import { ConfirmButton } from "../ui/confirm-button.tsx";
import { ErrorNote } from "../ui/error-note.tsx";
import { NameForm } from "../ui/name-form.tsx";
import { PagedItems } from "../ui/paged-items.tsx";
import { usePagedList } from "../ui/use-paged-list.ts";
import {
  type ApiKey,
  createOrganizationApiKey,
  keyOrganization,
  listOrganizationApiKeys,
  renameApiKey,
  revokeApiKey,
} from "./api.ts";

/**
 * The organization's API keys, a page at a time: create (the value shown once,
 * held in this screen's state only, so leaving the screen forgets it), rename,
 * revoke after a confirmation.
 */
export function ApiKeys({ apiKey }: { apiKey: string }) {
  const [organizationId, setOrganizationId] = useState<string | null>(null);
  const [organizationError, setOrganizationError] = useState<string | null>(null);
  const [created, setCreated] = useState<{ name: string; value: string } | null>(null);
  const { view, load, reload } = usePagedList(
    "api_keys",
    (page, size) => listOrganizationApiKeys(apiKey, organizationId ?? "", page, size),
    [apiKey, organizationId],
    { ready: organizationId !== null },
  );

  useEffect(() => {
    keyOrganization(apiKey).then(setOrganizationId, (e) => setOrganizationError(messageOf(e)));
  }, [apiKey]);

  return (
    <section aria-labelledby="api-keys-heading">
      <h1 id="api-keys-heading">API keys</h1>
      {organizationId && (
        <NameForm
          formLabel="New API key"
          fieldId="api-key-name"
          onSubmit={async (name) => {
            const key = await createOrganizationApiKey(apiKey, organizationId, name);
            setCreated({ name: key.name, value: key.value });
          }}
          onDone={reload}
        />
      )}
      {created && <CreatedKey name={created.name} value={created.value} onDone={() => setCreated(null)} />}
      <ErrorNote error={organizationError} />
      <PagedItems
        label="API keys"
        {...view}
        empty="No API keys yet."
        item={(key) => <KeyItem key={key.api_key_id} apiKey={apiKey} item={key} onChanged={() => void load()} />}
      />
    </section>
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

/** One key: its name and dates, a form to rename it, and a revoke that asks first. */
function KeyItem({ apiKey, item, onChanged }: { apiKey: string; item: ApiKey; onChanged: () => void }) {
  const [renaming, setRenaming] = useState(false);

  return (
    <li>
      {/* Text, never markup: a name is whatever its author typed. */}
      <span class="name">{item.name}</span>
      <span class="description">
        created {new Date(item.created_at).toLocaleString()}, last used {new Date(item.last_used).toLocaleString()}
      </span>
      {renaming ? (
        <NameForm
          formLabel={`Rename ${item.name}`}
          fieldId={`rename-${item.api_key_id}`}
          fieldLabel="New name"
          submitLabel="Save"
          initial={item.name}
          onSubmit={(name) => renameApiKey(apiKey, item.api_key_id, name)}
          onDone={() => {
            setRenaming(false);
            onChanged();
          }}
          onCancel={() => setRenaming(false)}
        />
      ) : (
        <span class="actions">
          <button type="button" aria-label={`Rename ${item.name}`} onClick={() => setRenaming(true)}>
            Rename
          </button>
          <ConfirmButton
            verb="Revoke"
            what={item.name}
            question="Revoke this key? Requests with it are refused at once; this cannot be undone."
            onConfirm={async () => {
              await revokeApiKey(apiKey, item.api_key_id);
              onChanged();
            }}
          />
        </span>
      )}
    </li>
  );
}
