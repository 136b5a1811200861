import { useCallback, useEffect, useState } from "preact/hooks";
import {
  type AssetPage,
  type Bucket,
  createAsset,
  createAssetUrl,
  deleteAsset,
  getBucket,
  listAssets,
  messageOf,
} from "./api.ts";
import { DeleteButton } from "./confirm.tsx";
import { Pages } from "./pages.tsx";
import { putFile } from "./upload.ts";

const pageSize = 20;

/** One bucket's files, a page at a time: upload one (with its progress), download one, delete one (asked first). */
export function BucketFiles({ apiKey, bucketId }: { apiKey: string; bucketId: string }) {
  const [bucket, setBucket] = useState<Bucket | null>(null);
  const [page, setPage] = useState(1);
  const [list, setList] = useState<AssetPage | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    getBucket(apiKey, bucketId).then(setBucket, (e) => setError(messageOf(e)));
  }, [apiKey, bucketId]);

  const load = useCallback(async () => {
    setError(null);
    try {
      setList(await listAssets(apiKey, bucketId, page, pageSize));
    } catch (e) {
      setError(messageOf(e));
    }
  }, [apiKey, bucketId, page]);
  useEffect(() => void load(), [load]);

  /** A signed GET URL, opened as a download: the key never goes into a URL, and the bytes never through the page. */
  const download = async (name: string) => {
    const signed = await createAssetUrl(apiKey, bucketId, name, "GET");
    const link = document.createElement("a");
    link.href = signed.url;
    link.download = name.split("/").pop() ?? name;
    link.click();
  };

  return (
    <section aria-labelledby="bucket-heading">
      <p>
        <a href="/console/files">All buckets</a>
      </p>
      <h1 id="bucket-heading">{bucket ? `Files in ${bucket.name}` : "Files"}</h1>
      <Upload apiKey={apiKey} bucketId={bucketId} onUploaded={() => void load()} />
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {!list && !error && <p>Loading files…</p>}
      {list && list.assets.length === 0 && <p>No files in this bucket yet.</p>}
      {list && list.assets.length > 0 && (
        <>
          <ul class="items" aria-label="Files">
            {list.assets.map((asset) => (
              <FileItem key={asset.name} name={asset.name} size={asset.size} onDownload={download}>
                <DeleteButton
                  what={asset.name}
                  question="Delete this file? This cannot be undone."
                  onDelete={async () => {
                    await deleteAsset(apiKey, bucketId, asset.name);
                    void load();
                  }}
                />
              </FileItem>
            ))}
          </ul>
          <Pages pagination={list.pagination} onPage={setPage} />
        </>
      )}
    </section>
  );
}

function FileItem({
  name,
  size,
  onDownload,
  children,
}: {
  name: string;
  size: number | undefined;
  onDownload: (name: string) => Promise<void>;
  children: preact.ComponentChildren;
}) {
  const [error, setError] = useState<string | null>(null);
  return (
    <li>
      {/* Text, never markup: a file name is whatever its uploader chose. */}
      <span class="name">{name}</span>
      <span class="description">{size === undefined ? "not uploaded" : `${size.toLocaleString()} bytes`}</span>
      <span class="actions">
        <button
          type="button"
          aria-label={`Download ${name}`}
          onClick={() => onDownload(name).catch((e) => setError(messageOf(e)))}
        >
          Download
        </button>
        {children}
      </span>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </li>
  );
}

/** Pick a file, and it is uploaded under its own name: the asset is made, then the File PUT to a signed URL. */
function Upload({ apiKey, bucketId, onUploaded }: { apiKey: string; bucketId: string; onUploaded: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<{ sent: number; total: number } | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (!file) return;
    setBusy(true);
    setError(null);
    setStatus(null);
    setProgress({ sent: 0, total: file.size });
    try {
      await createAsset(apiKey, bucketId, file.name);
      const signed = await createAssetUrl(apiKey, bucketId, file.name, "PUT");
      await putFile(signed, file, (sent, total) => setProgress({ sent, total }));
      setStatus(`Uploaded ${file.name}.`);
      onUploaded();
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} aria-label="Upload a file">
      <label for="upload-file">File</label>
      <input id="upload-file" type="file" required onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
      <button type="submit" disabled={busy || !file}>
        Upload
      </button>
      {progress && <progress aria-label="Upload progress" max={Math.max(progress.total, 1)} value={progress.sent} />}
      <span role="status">{status}</span>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </form>
  );
}
