import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { useFocusReturn } from "./use-focus-return.ts";

/** What a form opened by OpensForm is given: its name, its submit button's, and how it closes. */
export interface OpenedForm {
  formLabel: string;
  submitLabel: string;
  /** After it succeeded: closes it, then the opener's `onDone`. */
  onDone: () => void;
  onCancel: () => void;
}

/**
 * A button ("New tool") that opens a form of the same name in its place,
 * with a "Create" button; the form closes when done or cancelled, `onDone`
 * runs after a success, and the button comes back with the focus, so the
 * keyboard is not sent back to the page's top.
 */
export function OpensForm({
  label,
  onDone,
  children,
}: {
  label: string;
  onDone: () => void;
  children: (form: OpenedForm) => ComponentChildren;
}) {
  const [open, setOpen] = useState(false);
  const button = useFocusReturn(open);
  const close = () => setOpen(false);
  if (open)
    return (
      <>
        {children({
          formLabel: label,
          submitLabel: "Create",
          onDone: () => {
            close();
            onDone();
          },
          onCancel: close,
        })}
      </>
    );
  return (
    <button ref={button} type="button" onClick={() => setOpen(true)}>
      {label}
    </button>
  );
}
