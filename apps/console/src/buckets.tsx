import { useCallback, useEffect, useState } from "preact/hooks";
import { type BucketPage, createBucket, deleteBucket, listBuckets, messageOf } from "./api.ts";
import { DeleteButton } from "./confirm.tsx";
import { Pages } from "./pages.tsx";

const pageSize = 20;

/** The "Files" screen: the organization's buckets, a page at a time; create one, open one, delete one (asked first). */
export function Buckets({ apiKey }: { apiKey: string }) {
  const [page, setPage] = useState(1);
  const [list, setList] = useState<BucketPage | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    setError(null);
    try {
      setList(await listBuckets(apiKey, page, pageSize));
    } catch (e) {
      setError(messageOf(e));
    }
  }, [apiKey, page]);
  useEffect(() => void load(), [load]);

  const reload = () => {
    if (page === 1) void load();
    else setPage(1);
  };

  return (
    <section aria-labelledby="buckets-heading">
      <h1 id="buckets-heading">Files</h1>
      <NewBucket apiKey={apiKey} onCreated={reload} />
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {!list && !error && <p>Loading buckets…</p>}
      {list && list.buckets.length === 0 && <p>No buckets yet.</p>}
      {list && list.buckets.length > 0 && (
        <>
          <ul class="items" aria-label="Buckets">
            {list.buckets.map((bucket) => (
              <li key={bucket.bucket_id}>
                {/* Text, never markup: a name is whatever its author typed. */}
                <a class="name" href={`/console/files/${bucket.bucket_id}`}>
                  {bucket.name}
                </a>
                <span class="description">created {new Date(bucket.created_at).toLocaleString()}</span>
                <span class="actions">
                  <DeleteButton
                    what={bucket.name}
                    question="Delete this bucket and every file in it? This cannot be undone."
                    onDelete={async () => {
                      await deleteBucket(apiKey, bucket.bucket_id);
                      void load();
                    }}
                  />
                </span>
              </li>
            ))}
          </ul>
          <Pages pagination={list.pagination} onPage={setPage} />
        </>
      )}
    </section>
  );
}

function NewBucket({ apiKey, onCreated }: { apiKey: string; onCreated: () => void }) {
  const [name, setName] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await createBucket(apiKey, name);
      setName("");
      onCreated();
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} aria-label="New bucket">
      <label for="bucket-name">Name</label>
      <input id="bucket-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
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
