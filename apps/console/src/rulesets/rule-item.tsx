import { useState } from "preact/hooks";
import { ConfirmButton } from "../ui/confirm-button.tsx";
import { FormEnd } from "../ui/form-end.tsx";
import { MoveButtons } from "../ui/move-buttons.tsx";
import { TextField } from "../ui/text-field.tsx";
import { useAction } from "../ui/use-action.ts";
import { useFocusReturn } from "../ui/use-focus-return.ts";
import { deleteRule, type Rule, updateRule } from "./api.ts";
import { ruleNameOf, ruleValueOf, textOf } from "./rule-text.ts";

/**
 * One rule of a ruleset, numbered in its order: its text, edited in place; up
 * and down; delete (asked first). Buttons are named "… rule 2", as a person
 * would point at it.
 */
export function RuleItem({
  apiKey,
  rule,
  index,
  count,
  moving,
  onMove,
  onChanged,
}: {
  apiKey: string;
  rule: Rule;
  index: number;
  count: number;
  moving: boolean;
  onMove: (delta: -1 | 1) => void;
  onChanged: () => Promise<void>;
}) {
  const what = `rule ${index + 1}`;
  const [editing, setEditing] = useState(false);
  const editButton = useFocusReturn(editing);

  return (
    <li>
      {/* Seen, not read twice: the list itself tells a screen reader each rule's place. */}
      <span class="number" aria-hidden="true">
        {index + 1}.
      </span>
      {editing ? (
        <RuleEdit
          apiKey={apiKey}
          rule={rule}
          what={what}
          onDone={async () => {
            await onChanged();
            setEditing(false);
          }}
          onCancel={() => setEditing(false)}
        />
      ) : (
        <>
          {/* Text, never markup: a rule is whatever its author typed. */}
          <span class="rule-text">{textOf(rule.rule)}</span>
          <span class="actions">
            <button ref={editButton} type="button" aria-label={`Edit ${what}`} onClick={() => setEditing(true)}>
              Edit
            </button>
            <MoveButtons what={what} index={index} count={count} busy={moving} onMove={onMove} />
            <ConfirmButton
              verb="Delete"
              what={what}
              question="Delete this rule? It is taken out of every ruleset that lists it."
              onConfirm={async () => {
                await deleteRule(apiKey, rule.rule_id);
                await onChanged();
              }}
            />
          </span>
        </>
      )}
    </li>
  );
}

/**
 * A rule's text in a form. A rule the console named after its text (see
 * ruleNameOf) is renamed after the new text; a name given through the API is kept.
 */
function RuleEdit({
  apiKey,
  rule,
  what,
  onDone,
  onCancel,
}: {
  apiKey: string;
  rule: Rule;
  what: string;
  onDone: () => Promise<void>;
  onCancel: () => void;
}) {
  const [text, setText] = useState(textOf(rule.rule));
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const named = rule.name === ruleNameOf(textOf(rule.rule));
    await run(async () => {
      await updateRule(apiKey, rule.rule_id, {
        rule: ruleValueOf(text, rule.rule),
        ...(named ? { name: ruleNameOf(text) } : {}),
      });
      await onDone();
    });
  };
  return (
    <form onSubmit={submit} aria-label={`Edit ${what}`}>
      <TextField
        id={`rule-${rule.rule_id}`}
        label={`Text of ${what}`}
        multiline
        required
        focus
        value={text}
        onValue={setText}
      />
      <FormEnd submitLabel="Save" busy={busy} error={error} onCancel={onCancel} />
    </form>
  );
}
