import { useEffect, useRef, useState } from "preact/hooks";
import { FormEnd } from "./form-end.tsx";
import { useAction } from "./use-action.ts";

/**
 * A form with one name field: "New …" forms and renames. On success the field
 * empties and `onDone` runs; on failure the API's message shows under it.
 * Opened in place of a button (`onCancel` given), it takes the focus, so the
 * keyboard is not sent back to the page's top.
 */
export function NameForm({
  formLabel,
  fieldId,
  fieldLabel = "Name",
  submitLabel = "Create",
  initial = "",
  onSubmit,
  onDone,
  onCancel,
}: {
  formLabel: string;
  fieldId: string;
  fieldLabel?: string;
  submitLabel?: string;
  initial?: string;
  onSubmit: (name: string) => Promise<unknown>;
  onDone?: () => void;
  onCancel?: () => void;
}) {
  const [name, setName] = useState(initial);
  const { busy, error, run } = useAction();
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (onCancel) field.current?.focus();
  }, []);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (await run(() => onSubmit(name))) {
      setName("");
      onDone?.();
    }
  };

  return (
    <form onSubmit={submit} aria-label={formLabel}>
      <label for={fieldId}>{fieldLabel}</label>
      <input ref={field} id={fieldId} required value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <FormEnd submitLabel={submitLabel} busy={busy} error={error} onCancel={onCancel} />
    </form>
  );
}
