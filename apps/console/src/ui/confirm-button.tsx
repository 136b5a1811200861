import { useEffect, useRef, useState } from "preact/hooks";
import { ErrorNote } from "./error-note.tsx";
import { useAction } from "./use-action.ts";

/**
 * A button for what cannot be undone ("Delete", "Revoke") that asks first: the
 * question takes its place, with the focus on Cancel, so Enter alone does
 * nothing. Its accessible name says what it acts on ("Delete Uploads").
 */
export function ConfirmButton({
  verb,
  what,
  question,
  onConfirm,
}: {
  verb: string;
  what: string;
  question: string;
  onConfirm: () => Promise<unknown>;
}) {
  const [asking, setAsking] = useState(false);
  const { busy, error, run } = useAction();
  const cancelButton = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) cancelButton.current?.focus();
  }, [asking]);

  return (
    <>
      {asking ? (
        <fieldset aria-label={`${verb} ${what}?`} class="confirm">
          <span>{question}</span>
          <button type="button" disabled={busy} onClick={() => void run(onConfirm)}>
            Yes, {verb.toLowerCase()}
          </button>
          <button ref={cancelButton} type="button" onClick={() => setAsking(false)}>
            Cancel
          </button>
        </fieldset>
      ) : (
        <button type="button" aria-label={`${verb} ${what}`} onClick={() => setAsking(true)}>
          {verb}
        </button>
      )}
      <ErrorNote error={error} />
    </>
  );
}
