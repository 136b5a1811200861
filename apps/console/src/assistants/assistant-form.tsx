import { useEffect, useState } from "preact/hooks";
import { listKnowledgeBases } from "../knowledge/api.ts";
import { getRuleset, listRulesets } from "../rulesets/api.ts";
import { listTools } from "../tools/api.ts";
import { CheckboxPicker } from "../ui/checkbox-picker.tsx";
import { ErrorNote } from "../ui/error-note.tsx";
import { TextField } from "../ui/text-field.tsx";
import { useAction } from "../ui/use-action.ts";
import { type Assistant, type AssistantChanges, updateAssistant } from "./api.ts";
import { RulesetOrder } from "./ruleset-order.tsx";

const sameList = (a: readonly string[], b: readonly string[]) => a.join() === b.join();

/** `ids` with `id` added last (picked) or taken out (unpicked). */
const toggled = (ids: readonly string[], id: string, picked: boolean) =>
  picked ? [...ids.filter((i) => i !== id), id] : ids.filter((i) => i !== id);

/**
 * An assistant's fields, edited together and saved with one UpdateAssistant
 * that sends only what changed: a refused save (an unknown id, a name too
 * long) shows the API's message, and the API stores nothing of it.
 */
export function AssistantForm({
  apiKey,
  assistant,
  onSaved,
}: {
  apiKey: string;
  assistant: Assistant;
  onSaved: (assistant: Assistant) => void;
}) {
  const [name, setName] = useState(assistant.name);
  const [description, setDescription] = useState(assistant.description);
  const [input, setInput] = useState(assistant.input ?? "");
  const [rulesetIds, setRulesetIds] = useState(assistant.ruleset_ids);
  const [toolIds, setToolIds] = useState(assistant.tool_ids);
  const [knowledgeBaseIds, setKnowledgeBaseIds] = useState(assistant.knowledge_base_ids);
  const [rulesetNames, setRulesetNames] = useState<Record<string, string>>({});
  const [status, setStatus] = useState<string | null>(null);
  const { busy, error, run } = useAction();

  // The order list names each picked ruleset, wherever the picker's pages have got to.
  useEffect(() => {
    for (const id of assistant.ruleset_ids)
      getRuleset(apiKey, id).then(
        (r) => setRulesetNames((names) => ({ ...names, [id]: r.name })),
        () => undefined, // Left shown by its id.
      );
  }, [apiKey, assistant.assistant_id]);

  const changes = (): AssistantChanges => ({
    ...(name !== assistant.name ? { name } : {}),
    ...(description !== assistant.description ? { description } : {}),
    ...(input !== (assistant.input ?? "") ? { input } : {}),
    ...(sameList(rulesetIds, assistant.ruleset_ids) ? {} : { ruleset_ids: rulesetIds }),
    ...(sameList(toolIds, assistant.tool_ids) ? {} : { tool_ids: toolIds }),
    ...(sameList(knowledgeBaseIds, assistant.knowledge_base_ids) ? {} : { knowledge_base_ids: knowledgeBaseIds }),
  });

  const submit = async (event: Event) => {
    event.preventDefault();
    setStatus(null);
    const changed = changes();
    if (Object.keys(changed).length === 0) return setStatus("Nothing changed.");
    if (await run(async () => onSaved(await updateAssistant(apiKey, assistant.assistant_id, changed))))
      setStatus("Saved.");
  };

  return (
    <form class="edit" onSubmit={submit} aria-label={`Edit ${assistant.name}`}>
      <TextField id="edit-assistant-name" label="Name" required value={name} onValue={setName} />
      <TextField id="edit-assistant-description" label="Description" value={description} onValue={setDescription} />
      <TextField id="edit-assistant-input" label="Input template" multiline value={input} onValue={setInput} />
      <CheckboxPicker
        legend="Rulesets"
        itemsKey="rulesets"
        fetchPage={(page, size) => listRulesets(apiKey, page, size)}
        deps={[apiKey]}
        idOf={(r) => r.ruleset_id}
        nameOf={(r) => r.name}
        picked={rulesetIds}
        onToggle={(r, picked) => {
          setRulesetNames((names) => ({ ...names, [r.ruleset_id]: r.name }));
          setRulesetIds((ids) => toggled(ids, r.ruleset_id, picked));
        }}
      />
      <RulesetOrder ids={rulesetIds} names={rulesetNames} onOrder={setRulesetIds} />
      <CheckboxPicker
        legend="Tools"
        itemsKey="tools"
        fetchPage={(page, size) => listTools(apiKey, page, size)}
        deps={[apiKey]}
        idOf={(t) => t.tool_id}
        nameOf={(t) => t.name}
        picked={toolIds}
        onToggle={(t, picked) => setToolIds((ids) => toggled(ids, t.tool_id, picked))}
      />
      <CheckboxPicker
        legend="Knowledge bases"
        itemsKey="knowledge_bases"
        fetchPage={(page, size) => listKnowledgeBases(apiKey, page, size)}
        deps={[apiKey]}
        idOf={(k) => k.knowledge_base_id}
        nameOf={(k) => k.name}
        picked={knowledgeBaseIds}
        onToggle={(k, picked) => setKnowledgeBaseIds((ids) => toggled(ids, k.knowledge_base_id, picked))}
      />
      <span class="actions">
        <button type="submit" disabled={busy}>
          Save
        </button>
        <span role="status">{status}</span>
      </span>
      <ErrorNote error={error} />
    </form>
  );
}
