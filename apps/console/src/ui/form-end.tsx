import { ErrorNote } from "./error-note.tsx";

/**
 * The end of a form: its submit button (disabled while the form is sent, so
 * it is not sent twice), "Cancel" when the form can be closed, and the API's
 * message when sending it failed.
 */
export function FormEnd({
  submitLabel,
  busy,
  error,
  onCancel,
}: {
  submitLabel: string;
  busy: boolean;
  error: string | null;
  onCancel?: () => void;
}) {
  return (
    <>
      <span class="actions">
        <button type="submit" disabled={busy}>
          {submitLabel}
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </span>
      <ErrorNote error={error} />
    </>
  );
}
