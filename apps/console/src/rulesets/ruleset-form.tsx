import { useState } from "preact/hooks";
import { ErrorNote } from "../ui/error-note.tsx";
import { TextField } from "../ui/text-field.tsx";
import { useAction } from "../ui/use-action.ts";
import { createRuleset } from "./api.ts";

/** "New ruleset": a name, and an alias and a description if given (left empty, they are not sent). */
export function RulesetForm({
  apiKey,
  onDone,
  onCancel,
}: {
  apiKey: string;
  onDone: () => void;
  onCancel: () => void;
}) {
  const [name, setName] = useState("");
  const [alias, setAlias] = useState("");
  const [description, setDescription] = useState("");
  const { busy, error, run } = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const created = await run(() =>
      createRuleset(apiKey, {
        name,
        ...(alias ? { alias } : {}),
        ...(description ? { description } : {}),
      }),
    );
    if (created) onDone();
  };

  return (
    <form onSubmit={submit} aria-label="New ruleset">
      <TextField id="ruleset-name" label="Name" required focus value={name} onValue={setName} />
      <TextField id="ruleset-alias" label="Alias (optional)" value={alias} onValue={setAlias} />
      <TextField id="ruleset-description" label="Description (optional)" value={description} onValue={setDescription} />
      <button type="submit" disabled={busy}>
        Create
      </button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
      <ErrorNote error={error} />
    </form>
  );
}
