import { useState } from "preact/hooks";
import { FormEnd } from "../ui/form-end.tsx";
import type { OpenedForm } from "../ui/opens-form.tsx";
import { TextField } from "../ui/text-field.tsx";
import { useAction } from "../ui/use-action.ts";

/** A ruleset's own fields as typed; an alias left empty is `""`. */
export interface RulesetFields {
  name: string;
  alias: string;
  description: string;
}

/**
 * A ruleset's name, alias and description: "New ruleset", or its details
 * edited (`initial`). Opened in place of a button, it takes the focus;
 * `onSubmit` decides what to send.
 */
export function RulesetForm({
  formLabel,
  submitLabel,
  initial = { name: "", alias: "", description: "" },
  onSubmit,
  onDone,
  onCancel,
}: OpenedForm & {
  initial?: RulesetFields;
  onSubmit: (fields: RulesetFields) => Promise<unknown>;
}) {
  const [name, setName] = useState(initial.name);
  const [alias, setAlias] = useState(initial.alias);
  const [description, setDescription] = useState(initial.description);
  const { busy, error, run } = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (await run(() => onSubmit({ name, alias, description }))) onDone();
  };

  return (
    <form onSubmit={submit} aria-label={formLabel}>
      <TextField id="ruleset-name" label="Name" required focus value={name} onValue={setName} />
      <TextField id="ruleset-alias" label="Alias (optional)" value={alias} onValue={setAlias} />
      <TextField id="ruleset-description" label="Description (optional)" value={description} onValue={setDescription} />
      <FormEnd submitLabel={submitLabel} busy={busy} error={error} onCancel={onCancel} />
    </form>
  );
}
