import { useEffect, useRef } from "preact/hooks";

/**
 * For a button that opens a form in its place: when the form closes (`open`
 * turns false), the button, back again, takes the focus, so the keyboard is
 * not sent back to the page's top. Give the returned ref to the button.
 */
export function useFocusReturn(open: boolean) {
  const button = useRef<HTMLButtonElement>(null);
  const wasOpen = useRef(open);
  useEffect(() => {
    if (wasOpen.current && !open) button.current?.focus();
    wasOpen.current = open;
  }, [open]);
  return button;
}
