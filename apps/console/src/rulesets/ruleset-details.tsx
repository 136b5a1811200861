import { useState } from "preact/hooks";
import { useFocusReturn } from "../ui/use-focus-return.ts";
import { type Ruleset, updateRuleset } from "./api.ts";
import { RulesetForm } from "./ruleset-form.tsx";

/**
 * A ruleset's alias and description, and "Edit details" to change them and
 * its name. Only what changed is sent. The API cannot take an alias away:
 * emptied, it is stored as `""`.
 */
export function RulesetDetails({
  apiKey,
  ruleset,
  onChanged,
}: {
  apiKey: string;
  ruleset: Ruleset;
  onChanged: () => Promise<void>;
}) {
  const [editing, setEditing] = useState(false);
  const editButton = useFocusReturn(editing);
  const initial = { name: ruleset.name, alias: ruleset.alias ?? "", description: ruleset.description };

  if (editing)
    return (
      <RulesetForm
        formLabel={`Edit ${ruleset.name}`}
        submitLabel="Save"
        initial={initial}
        onSubmit={async ({ name, alias, description }) => {
          const changes = {
            ...(name !== initial.name ? { name } : {}),
            ...(alias !== initial.alias ? { alias } : {}),
            ...(description !== initial.description ? { description } : {}),
          };
          if (Object.keys(changes).length > 0) await updateRuleset(apiKey, ruleset.ruleset_id, changes);
          await onChanged();
        }}
        onDone={() => setEditing(false)}
        onCancel={() => setEditing(false)}
      />
    );
  return (
    <>
      {/* Text, never markup: whatever their author typed. */}
      {ruleset.alias && <p class="description">Alias: {ruleset.alias}</p>}
      {ruleset.description && <p class="description">{ruleset.description}</p>}
      <button ref={editButton} type="button" onClick={() => setEditing(true)}>
        Edit details
      </button>
    </>
  );
}
