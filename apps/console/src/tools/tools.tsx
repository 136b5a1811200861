import { ConfirmButton } from "../ui/confirm-button.tsx";
import { OpensForm } from "../ui/opens-form.tsx";
import { PagedItems } from "../ui/paged-items.tsx";
import { usePagedList } from "../ui/use-paged-list.ts";
import { createTool, deleteTool, listTools } from "./api.ts";
import { ToolForm } from "./tool-form.tsx";

/** The "Tools" screen: the organization's tools, a page at a time; create one, open one, delete one (asked first). */
export function Tools({ apiKey }: { apiKey: string }) {
  const { view, load, reload } = usePagedList("tools", (page, size) => listTools(apiKey, page, size), [apiKey]);

  return (
    <section aria-labelledby="tools-heading">
      <h1 id="tools-heading">Tools</h1>
      <OpensForm label="New tool" onDone={reload}>
        {(form) => <ToolForm {...form} onSubmit={(fields) => createTool(apiKey, fields)} />}
      </OpensForm>
      <PagedItems
        label="Tools"
        {...view}
        empty="No tools yet."
        item={(tool) => (
          <li key={tool.tool_id}>
            {/* Text, never markup: a name is whatever its author typed. */}
            <a class="name" href={`/console/tools/${tool.tool_id}`}>
              {tool.name}
            </a>
            <span class="description">{tool.server ? tool.server.url : "no server"}</span>
            <span class="actions">
              <ConfirmButton
                verb="Delete"
                what={tool.name}
                question="Delete this tool? This cannot be undone."
                onConfirm={async () => {
                  await deleteTool(apiKey, tool.tool_id);
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
