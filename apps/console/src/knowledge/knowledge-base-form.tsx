import { useState } from "preact/hooks";
import { ErrorNote } from "../ui/error-note.tsx";
import { FormEnd } from "../ui/form-end.tsx";
import type { OpenedForm } from "../ui/opens-form.tsx";
import { TextField } from "../ui/text-field.tsx";
import { useAction } from "../ui/use-action.ts";
import type { KnowledgeBase, KnowledgeBaseFields } from "./api.ts";
import { readablePath, useBuckets } from "./use-buckets.ts";

/** `<bucket_id>/<path>` as asset_paths has it: no path is the whole bucket; a path ending in `/` a folder. */
const assetPath = (bucketId: string, path: string) => `${bucketId}/${path.trim().replace(/^\/+/, "")}`;

/**
 * A knowledge base's name, description, files and embedding model, to create
 * one or edit one. Files: the paths it has (each can be removed) and one more
 * picked from a bucket, added when the form is sent. It takes the focus, as it
 * opens in place of a button.
 */
export function KnowledgeBaseForm({
  apiKey,
  formLabel,
  submitLabel,
  initial,
  onSubmit,
  onDone,
  onCancel,
}: OpenedForm & {
  apiKey: string;
  initial?: KnowledgeBase;
  onSubmit: (fields: KnowledgeBaseFields) => Promise<unknown>;
}) {
  const [name, setName] = useState(initial?.name ?? "");
  const [description, setDescription] = useState(initial?.description ?? "");
  const [paths, setPaths] = useState(initial?.asset_paths ?? []);
  const [bucketId, setBucketId] = useState("");
  const [path, setPath] = useState("");
  const [model, setModel] = useState(initial?.config.gtc_pg_vector.embedding_model ?? "");
  const { buckets, error: bucketsError } = useBuckets(apiKey);
  const { busy, error, run } = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const picked = bucketId ? [assetPath(bucketId, path)] : [];
    const fields = {
      name,
      description,
      asset_paths: [...paths, ...picked.filter((p) => !paths.includes(p))],
      embedding_model: model.trim() || null,
    };
    if (await run(() => onSubmit(fields))) onDone();
  };

  const id = initial?.knowledge_base_id ?? "new";
  return (
    <form onSubmit={submit} aria-label={formLabel} class="fields">
      <TextField id={`kb-name-${id}`} label="Name" required focus value={name} onValue={setName} />
      <TextField id={`kb-description-${id}`} label="Description" value={description} onValue={setDescription} />
      {paths.length > 0 && (
        <ul aria-label="Files it reads" class="paths">
          {paths.map((p) => (
            <li key={p}>
              <span>{readablePath(p, buckets)}</span>
              <button
                type="button"
                aria-label={`Remove ${readablePath(p, buckets)}`}
                onClick={() => setPaths(paths.filter((q) => q !== p))}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <label for={`kb-bucket-${id}`}>{paths.length > 0 ? "Add files from bucket" : "Files from bucket"}</label>
      <select id={`kb-bucket-${id}`} value={bucketId} onChange={(e) => setBucketId(e.currentTarget.value)}>
        <option value="">{buckets ? "None" : "Loading buckets…"}</option>
        {buckets?.map((bucket) => (
          <option key={bucket.bucket_id} value={bucket.bucket_id}>
            {bucket.name}
          </option>
        ))}
      </select>
      <label for={`kb-path-${id}`}>Folder or file in the bucket (optional; a folder ends with /)</label>
      <input id={`kb-path-${id}`} value={path} onInput={(e) => setPath(e.currentTarget.value)} />
      <label for={`kb-model-${id}`}>Embedding model (provider:model, optional)</label>
      <input id={`kb-model-${id}`} value={model} onInput={(e) => setModel(e.currentTarget.value)} />
      <ErrorNote error={bucketsError} />
      <FormEnd submitLabel={submitLabel} busy={busy} error={error} onCancel={onCancel} />
    </form>
  );
}
