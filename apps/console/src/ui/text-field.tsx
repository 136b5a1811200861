import { useEffect, useRef } from "preact/hooks";

/**
 * A labelled text field: one line (`input`), or several (`textarea`) for
 * text such as a template or a rule, where Enter starts a new line and
 * Ctrl+Enter (⌘+Enter) sends the form, as in most editors. `focus` takes the
 * focus when it appears, for a form that opened in place of a button.
 */
export function TextField({
  id,
  label,
  value,
  onValue,
  multiline = false,
  required = false,
  focus = false,
}: {
  id: string;
  label: string;
  value: string;
  onValue: (value: string) => void;
  multiline?: boolean;
  required?: boolean;
  focus?: boolean;
}) {
  const field = useRef<HTMLInputElement & HTMLTextAreaElement>(null);
  useEffect(() => {
    if (focus) field.current?.focus();
  }, []);
  const onInput = (e: { currentTarget: HTMLInputElement | HTMLTextAreaElement }) => onValue(e.currentTarget.value);
  return (
    <span class="text-field">
      <label for={id}>{label}</label>
      {multiline ? (
        <textarea
          ref={field}
          id={id}
          rows={3}
          required={required}
          value={value}
          onInput={onInput}
          onKeyDown={(e) => {
            if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              e.currentTarget.form?.requestSubmit();
            }
          }}
        />
      ) : (
        <input ref={field} id={id} required={required} value={value} onInput={onInput} />
      )}
    </span>
  );
}
