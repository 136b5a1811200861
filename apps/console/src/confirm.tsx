import { useEffect, useRef, useState } from "preact/hooks";
import { messageOf } from "./api.ts";

/**
 * A "Delete" button that asks first: the question takes its place, with the
 * focus on Cancel, so Enter alone deletes nothing.
 */
export function DeleteButton({
  what,
  question,
  onDelete,
}: {
  what: string;
  question: string;
  onDelete: () => Promise<unknown>;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const cancelButton = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) cancelButton.current?.focus();
  }, [asking]);

  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onDelete();
    } catch (e) {
      setError(messageOf(e));
      setBusy(false);
    }
  };

  return (
    <>
      {asking ? (
        <fieldset aria-label={`Delete ${what}?`} class="confirm">
          <span>{question}</span>
          <button type="button" disabled={busy} onClick={() => void confirm()}>
            Yes, delete
          </button>
          <button ref={cancelButton} type="button" onClick={() => setAsking(false)}>
            Cancel
          </button>
        </fieldset>
      ) : (
        <button type="button" aria-label={`Delete ${what}`} onClick={() => setAsking(true)}>
          Delete
        </button>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
    </>
  );
}
