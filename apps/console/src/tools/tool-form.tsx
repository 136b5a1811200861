import { useState } from "preact/hooks";
import { FormEnd } from "../ui/form-end.tsx";
import type { OpenedForm } from "../ui/opens-form.tsx";
import { TextField } from "../ui/text-field.tsx";
import { useAction } from "../ui/use-action.ts";
import type { Tool, ToolFields, ToolServer } from "./api.ts";

/** "none", "all", or "kept": a list of activities set through the API, which this form keeps as it is. */
type Approval = "none" | "all" | "kept";

const approvalOf = (server: ToolServer | undefined): Approval =>
  server?.approval_required === true ? "all" : server?.approval_required?.length ? "kept" : "none";

/**
 * A tool's name, description and server (URL, transport, whether its calls
 * wait for a person's approval), to create one or edit one. The server's
 * headers, which this form does not show, are sent back as they were. It
 * takes the focus, as it opens in place of a button.
 */
export function ToolForm({
  formLabel,
  submitLabel,
  initial,
  onSubmit,
  onDone,
  onCancel,
}: OpenedForm & {
  initial?: Tool;
  onSubmit: (fields: ToolFields) => Promise<unknown>;
}) {
  const [name, setName] = useState(initial?.name ?? "");
  const [description, setDescription] = useState(initial?.description ?? "");
  const [url, setUrl] = useState(initial?.server?.url ?? "");
  const [transport, setTransport] = useState<ToolServer["transport"]>(initial?.server?.transport ?? "mcp");
  const [approval, setApproval] = useState<Approval>(approvalOf(initial?.server));
  const { busy, error, run } = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const kept = initial?.server?.approval_required;
    const approvalRequired = approval === "all" ? true : approval === "kept" ? kept : undefined;
    const server: ToolServer = {
      url,
      transport,
      headers: initial?.server?.headers ?? {},
      ...(approvalRequired ? { approval_required: approvalRequired } : {}),
    };
    if (await run(() => onSubmit({ name, description, server }))) onDone();
  };

  const id = initial?.tool_id ?? "new";
  const keptList = initial?.server?.approval_required;
  return (
    <form onSubmit={submit} aria-label={formLabel} class="fields">
      <TextField id={`tool-name-${id}`} label="Name" required focus value={name} onValue={setName} />
      <TextField id={`tool-description-${id}`} label="Description" value={description} onValue={setDescription} />
      <label for={`tool-url-${id}`}>Server URL</label>
      <input id={`tool-url-${id}`} type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
      <label for={`tool-transport-${id}`}>Transport</label>
      <select
        id={`tool-transport-${id}`}
        value={transport}
        onChange={(e) => setTransport(e.currentTarget.value as ToolServer["transport"])}
      >
        <option value="mcp">MCP server</option>
        <option value="griptape">Griptape tool server</option>
      </select>
      <label for={`tool-approval-${id}`}>Approval required</label>
      <select
        id={`tool-approval-${id}`}
        value={approval}
        onChange={(e) => setApproval(e.currentTarget.value as Approval)}
      >
        <option value="none">None: calls run at once</option>
        <option value="all">All: every call waits for a person</option>
        {Array.isArray(keptList) && keptList.length > 0 && (
          <option value="kept">Only {keptList.join(", ")} (as set through the API)</option>
        )}
      </select>
      <FormEnd submitLabel={submitLabel} busy={busy} error={error} onCancel={onCancel} />
    </form>
  );
}
