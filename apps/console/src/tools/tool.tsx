import { useEffect, useState } from "preact/hooks";
import { messageOf } from "../api/request.ts";
import { ErrorNote } from "../ui/error-note.tsx";
import { type Activity, ActivityItem } from "./activity.tsx";
import { getTool, getToolOpenApi, type Tool, type ToolOpenApi, updateTool } from "./api.ts";
import { ToolForm } from "./tool-form.tsx";

/** The activities in GetToolOpenApi's document: one POST `/activities/<name>` each. */
function activitiesOf(doc: ToolOpenApi): Activity[] {
  if ("error" in doc) return [];
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    item.post
      ? [
          {
            name: item.post.operationId ?? path.replace(/^\/activities\//, ""),
            description: item.post.description ?? "",
            schema: item.post.requestBody?.content?.["application/json"]?.schema ?? {},
          },
        ]
      : [],
  );
}

/** One tool: its settings (editable), and its server's activities as the server lists them now, each to try. */
export function ToolPage({ apiKey, toolId }: { apiKey: string; toolId: string }) {
  const [tool, setTool] = useState<Tool | null>(null);
  const [toolError, setToolError] = useState<string | null>(null);
  const [editing, setEditing] = useState(false);
  const [activities, setActivities] = useState<Activity[] | null>(null);
  const [activitiesError, setActivitiesError] = useState<string | null>(null);

  useEffect(() => {
    getTool(apiKey, toolId).then(setTool, (e) => setToolError(messageOf(e)));
  }, [apiKey, toolId]);
  // Listed again when the server changes (a new URL is another server), not when only a name or setting does.
  const server = tool?.server && `${tool.server.transport} ${tool.server.url}`;
  useEffect(() => {
    if (!server) return;
    setActivities(null);
    setActivitiesError(null);
    getToolOpenApi(apiKey, toolId).then(
      (doc) => {
        if ("error" in doc) setActivitiesError(`The server's activities could not be listed: ${doc.error}`);
        setActivities(activitiesOf(doc));
      },
      (e) => setActivitiesError(messageOf(e)),
    );
  }, [apiKey, toolId, server]);

  return (
    <section aria-labelledby="tool-heading">
      <p>
        <a href="/console/tools">All tools</a>
      </p>
      <h1 id="tool-heading">{tool ? tool.name : "Tool"}</h1>
      <ErrorNote error={toolError} />
      {!tool && !toolError && <p>Loading the tool…</p>}
      {tool &&
        (editing ? (
          <ToolForm
            formLabel={`Edit ${tool.name}`}
            submitLabel="Save"
            initial={tool}
            onSubmit={async (fields) => setTool(await updateTool(apiKey, toolId, fields))}
            onDone={() => setEditing(false)}
            onCancel={() => setEditing(false)}
          />
        ) : (
          <>
            {tool.description && <p class="description">{tool.description}</p>}
            <dl class="details">
              <dt>Server</dt>
              <dd>{tool.server ? `${tool.server.url} (${tool.server.transport})` : "none"}</dd>
              <dt>Approval required</dt>
              <dd>
                {tool.server?.approval_required === true
                  ? "all activities"
                  : tool.server?.approval_required?.join(", ") || "none"}
              </dd>
            </dl>
            <button type="button" onClick={() => setEditing(true)}>
              Edit
            </button>
          </>
        ))}
      <h2>Activities</h2>
      {tool && !tool.server && <p>This tool has no server yet: edit it to give it one.</p>}
      <ErrorNote error={activitiesError} />
      {tool?.server && !activities && !activitiesError && <p>Asking the server for its activities…</p>}
      {activities && activities.length === 0 && !activitiesError && <p>The server offers no activities.</p>}
      {activities && activities.length > 0 && (
        <ul class="activities" aria-label="Activities">
          {activities.map((activity) => (
            <ActivityItem key={activity.name} apiKey={apiKey} toolId={toolId} activity={activity} />
          ))}
        </ul>
      )}
    </section>
  );
}
