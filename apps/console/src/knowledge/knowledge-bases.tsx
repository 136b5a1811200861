import { ConfirmButton } from "../ui/confirm-button.tsx";
import { OpensForm } from "../ui/opens-form.tsx";
import { PagedItems } from "../ui/paged-items.tsx";
import { usePagedList } from "../ui/use-paged-list.ts";
import { createKnowledgeBase, deleteKnowledgeBase, listKnowledgeBases } from "./api.ts";
import { KnowledgeBaseForm } from "./knowledge-base-form.tsx";

/** The "Knowledge" screen: the organization's knowledge bases, a page at a time; create one, open one, delete one. */
export function KnowledgeBases({ apiKey }: { apiKey: string }) {
  const { view, load, reload } = usePagedList(
    "knowledge_bases",
    (page, size) => listKnowledgeBases(apiKey, page, size),
    [apiKey],
  );

  return (
    <section aria-labelledby="knowledge-heading">
      <h1 id="knowledge-heading">Knowledge</h1>
      <OpensForm label="New knowledge base" onDone={reload}>
        {(form) => (
          <KnowledgeBaseForm {...form} apiKey={apiKey} onSubmit={(fields) => createKnowledgeBase(apiKey, fields)} />
        )}
      </OpensForm>
      <PagedItems
        label="Knowledge bases"
        {...view}
        empty="No knowledge bases yet."
        item={(kb) => (
          <li key={kb.knowledge_base_id}>
            {/* Text, never markup: a name is whatever its author typed. */}
            <a class="name" href={`/console/knowledge/${kb.knowledge_base_id}`}>
              {kb.name}
            </a>
            {kb.description && <span class="description">{kb.description}</span>}
            <span class="actions">
              <ConfirmButton
                verb="Delete"
                what={kb.name}
                question="Delete this knowledge base and its index? Its files stay in their buckets."
                onConfirm={async () => {
                  await deleteKnowledgeBase(apiKey, kb.knowledge_base_id);
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
