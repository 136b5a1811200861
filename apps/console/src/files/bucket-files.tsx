import { useEffect, useState } from "preact/hooks";
import { messageOf } from "../api/request.ts";
import { ConfirmButton } from "../ui/confirm-button.tsx";
import { ErrorNote } from "../ui/error-note.tsx";
import { PagedItems } from "../ui/paged-items.tsx";
import { useAction } from "../ui/use-action.ts";
import { usePagedList } from "../ui/use-paged-list.ts";
import { type Bucket, createAsset, createAssetUrl, deleteAsset, getBucket, listAssets } from "./api.ts";
import { putFile } from "./upload.ts";

/** One bucket's files, a page at a time: upload one (with its progress), download one, delete one (asked first). */
export function BucketFiles({ apiKey, bucketId }: { apiKey: string; bucketId: string }) {
  const [bucket, setBucket] = useState<Bucket | null>(null);
  const [bucketError, setBucketError] = useState<string | null>(null);
  const { view, load } = usePagedList("assets", (page, size) => listAssets(apiKey, bucketId, page, size), [
    apiKey,
    bucketId,
  ]);

  useEffect(() => {
    getBucket(apiKey, bucketId).then(setBucket, (e) => setBucketError(messageOf(e)));
  }, [apiKey, bucketId]);

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
      <ErrorNote error={bucketError} />
      <PagedItems
        label="Files"
        {...view}
        empty="No files in this bucket yet."
        item={(asset) => (
          <FileItem key={asset.name} name={asset.name} size={asset.size} onDownload={download}>
            <ConfirmButton
              verb="Delete"
              what={asset.name}
              question="Delete this file? This cannot be undone."
              onConfirm={async () => {
                await deleteAsset(apiKey, bucketId, asset.name);
                void load();
              }}
            />
          </FileItem>
        )}
      />
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
  const { error, run } = useAction();
  return (
    <li>
      {/* Text, never markup: a file name is whatever its uploader chose. */}
      <span class="name">{name}</span>
      <span class="description">{size === undefined ? "not uploaded" : `${size.toLocaleString()} bytes`}</span>
      <span class="actions">
        <button type="button" aria-label={`Download ${name}`} onClick={() => void run(() => onDownload(name))}>
          Download
        </button>
        {children}
      </span>
      <ErrorNote error={error} />
    </li>
  );
}

/** Pick a file, and it is uploaded under its own name: the asset is made, then the File PUT to a signed URL. */
function Upload({ apiKey, bucketId, onUploaded }: { apiKey: string; bucketId: string; onUploaded: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<{ sent: number; total: number } | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const { busy, error, run } = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (!file) return;
    setStatus(null);
    setProgress({ sent: 0, total: file.size });
    const uploaded = await run(async () => {
      await createAsset(apiKey, bucketId, file.name);
      const signed = await createAssetUrl(apiKey, bucketId, file.name, "PUT");
      await putFile(signed, file, (sent, total) => setProgress({ sent, total }));
    });
    if (uploaded) {
      setStatus(`Uploaded ${file.name}.`);
      onUploaded();
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
      <ErrorNote error={error} />
    </form>
  );
}
