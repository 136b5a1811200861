import { useState } from "preact/hooks";
import { ErrorNote } from "../ui/error-note.tsx";
import { useAction } from "../ui/use-action.ts";
import { type Artifact, type InputSchema, invokeToolActivity } from "./api.ts";
import { type FieldValues, inputOf, SchemaFields } from "./schema-form.tsx";

export interface Activity {
  name: string;
  description: string;
  schema: InputSchema;
}

/** A result as text: a text's or an error's value as it is, anything else (JSON, lists, images) as JSON. */
const textOf = (artifact: Artifact) =>
  typeof artifact.value === "string" && (artifact.type === "TextArtifact" || artifact.type === "ErrorArtifact")
    ? artifact.value
    : JSON.stringify(artifact.type === "JsonArtifact" ? artifact.value : artifact, null, 2);

/** One activity: its name, description and input schema, and a form to try it ("Run"), with the result as text. */
export function ActivityItem({ apiKey, toolId, activity }: { apiKey: string; toolId: string; activity: Activity }) {
  const [values, setValues] = useState<FieldValues>({});
  const [result, setResult] = useState<Artifact | null>(null);
  const { busy, error, run } = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    setResult(null);
    await run(async () =>
      setResult(await invokeToolActivity(apiKey, toolId, activity.name, inputOf(activity.schema, values))),
    );
  };

  const failed = result?.type === "ErrorArtifact";
  return (
    <li class="activity">
      <h3>{activity.name}</h3>
      {activity.description && <p class="description">{activity.description}</p>}
      <details>
        <summary>Input schema</summary>
        <pre>{JSON.stringify(activity.schema, null, 2)}</pre>
      </details>
      <form onSubmit={submit} aria-label={`Try ${activity.name}`} class="fields">
        <SchemaFields
          schema={activity.schema}
          idPrefix={`activity-${activity.name}`}
          values={values}
          onChange={setValues}
        />
        <button type="submit" disabled={busy}>
          Run
        </button>
        <ErrorNote error={error} />
      </form>
      {result && (
        <div role="status" aria-label={`Result of ${activity.name}`} class={failed ? "result error" : "result"}>
          <p>{failed ? "The tool answered with an error:" : `Result (${result.type}):`}</p>
          <pre>{textOf(result)}</pre>
        </div>
      )}
    </li>
  );
}
