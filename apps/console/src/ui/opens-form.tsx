import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { useFocusReturn } from "./use-focus-return.ts";

/**
 * A button ("New tool") that opens a form in its place. The form gets
 * `close`, to call once it is done or cancelled; the button then comes back
 * with the focus, so the keyboard is not sent back to the page's top.
 */
export function OpensForm({ label, children }: { label: string; children: (close: () => void) => ComponentChildren }) {
  const [open, setOpen] = useState(false);
  const button = useFocusReturn(open);
  if (open) return <>{children(() => setOpen(false))}</>;
  return (
    <button ref={button} type="button" onClick={() => setOpen(true)}>
      {label}
    </button>
  );
}
