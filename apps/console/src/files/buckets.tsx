import { ConfirmButton } from "../ui/confirm-button.tsx";
import { NameForm } from "../ui/name-form.tsx";
import { PagedItems } from "../ui/paged-items.tsx";
import { usePagedList } from "../ui/use-paged-list.ts";
import { createBucket, deleteBucket, listBuckets } from "./api.ts";

/** The "Files" screen: the organization's buckets, a page at a time; create one, open one, delete one (asked first). */
export function Buckets({ apiKey }: { apiKey: string }) {
  const { view, load, reload } = usePagedList("buckets", (page, size) => listBuckets(apiKey, page, size), [apiKey]);

  return (
    <section aria-labelledby="buckets-heading">
      <h1 id="buckets-heading">Files</h1>
      <NameForm
        formLabel="New bucket"
        fieldId="bucket-name"
        onSubmit={(name) => createBucket(apiKey, name)}
        onDone={reload}
      />
      <PagedItems
        label="Buckets"
        {...view}
        empty="No buckets yet."
        item={(bucket) => (
          <li key={bucket.bucket_id}>
            {/* Text, never markup: a name is whatever its author typed. */}
            <a class="name" href={`/console/files/${bucket.bucket_id}`}>
              {bucket.name}
            </a>
            <span class="description">created {new Date(bucket.created_at).toLocaleString()}</span>
            <span class="actions">
              <ConfirmButton
                verb="Delete"
                what={bucket.name}
                question="Delete this bucket and every file in it? This cannot be undone."
                onConfirm={async () => {
                  await deleteBucket(apiKey, bucket.bucket_id);
                  void load();
                }}
              />
            </span>
          </li>
        )}
      />
    </section>
  );
}
