import { useEffect, useRef } from "preact/hooks";

/** `list` with the item at `index` moved by `delta` places (-1 up, +1 down); the same order when it cannot move. */
export function moved<T>(list: readonly T[], index: number, delta: -1 | 1): T[] {
  const copy = [...list];
  const to = index + delta;
  if (to < 0 || to >= list.length) return copy;
  [copy[index], copy[to]] = [copy[to] as T, copy[index] as T];
  return copy;
}

/**
 * "Up" and "Down" for one item of an ordered list (render it inside the
 * item's keyed element), named with the item ("Move rule 2 up"). The pressed
 * button takes the focus back once the item has moved, which re-inserting
 * elements can drop, so the keyboard can keep moving it. At an end of the list
 * the button says it is unavailable (`aria-disabled`) but keeps the focus.
 */
export function MoveButtons({
  what,
  index,
  count,
  busy = false,
  onMove,
}: {
  what: string;
  index: number;
  count: number;
  busy?: boolean;
  onMove: (delta: -1 | 1) => void;
}) {
  const pressed = useRef<-1 | 1 | null>(null);
  const up = useRef<HTMLButtonElement>(null);
  const down = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (pressed.current !== null) (pressed.current === -1 ? up : down).current?.focus();
    pressed.current = null;
  }, [index]);

  const button = (delta: -1 | 1, text: string, atEnd: boolean) => (
    <button
      ref={delta === -1 ? up : down}
      type="button"
      aria-label={`Move ${what} ${text.toLowerCase()}`}
      aria-disabled={atEnd || busy}
      onClick={() => {
        if (atEnd || busy) return;
        pressed.current = delta;
        onMove(delta);
      }}
    >
      {text}
    </button>
  );
  return (
    <>
      {button(-1, "Up", index === 0)}
      {button(1, "Down", index === count - 1)}
    </>
  );
}
