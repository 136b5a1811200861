import { useEffect, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { messageOf } from "../api/request.ts";
import { ConfirmButton } from "../ui/confirm-button.tsx";
import { ErrorNote } from "../ui/error-note.tsx";
import { moved } from "../ui/move-buttons.tsx";
import { TextField } from "../ui/text-field.tsx";
import { useAction } from "../ui/use-action.ts";
import {
  createRule,
  deleteRule,
  deleteRuleset,
  getRuleset,
  listRulesetRules,
  type Rule,
  type Ruleset,
  updateRuleset,
} from "./api.ts";
import { RuleItem } from "./rule-item.tsx";
import { ruleNameOf } from "./rule-text.ts";
import { RulesetDetails } from "./ruleset-details.tsx";

/**
 * One ruleset (`/console/rulesets/<id>`): its rules in the order they reach the
 * model, all at once (a ruleset holds at most 100); add, edit, reorder and
 * delete rules; delete the ruleset. After each change both are read again, so
 * the page shows what the API holds.
 */
export function RulesetPage({ apiKey, rulesetId }: { apiKey: string; rulesetId: string }) {
  const [ruleset, setRuleset] = useState<Ruleset | null>(null);
  const [rules, setRules] = useState<Rule[]>([]);
  const [loadError, setLoadError] = useState<string | null>(null);
  const order = useAction();
  const { route } = useLocation();

  const refresh = async () => {
    const [current, list] = await Promise.all([getRuleset(apiKey, rulesetId), listRulesetRules(apiKey, rulesetId)]);
    setRuleset(current);
    setRules(list.rules);
  };
  useEffect(() => {
    refresh().catch((e) => setLoadError(messageOf(e)));
  }, [apiKey, rulesetId]);

  const ruleIds = rules.map((r) => r.rule_id);
  const move = (index: number, delta: -1 | 1) =>
    void order.run(async () => {
      await updateRuleset(apiKey, rulesetId, { rule_ids: moved(ruleIds, index, delta) });
      await refresh();
    });

  return (
    <section aria-labelledby="ruleset-heading">
      <p>
        <a href="/console/rulesets">All rulesets</a>
      </p>
      {/* Text, never markup: names are whatever their authors typed. */}
      <h1 id="ruleset-heading">{ruleset ? ruleset.name : "Ruleset"}</h1>
      <ErrorNote error={loadError} />
      {!ruleset && !loadError && <p>Loading the ruleset…</p>}
      {ruleset && (
        <>
          <RulesetDetails apiKey={apiKey} ruleset={ruleset} onChanged={refresh} />
          <h2 id="rules-heading">Rules, in the order they reach the model</h2>
          {rules.length === 0 ? (
            <p>No rules yet.</p>
          ) : (
            <ol class="items rules" aria-labelledby="rules-heading">
              {rules.map((rule, index) => (
                <RuleItem
                  key={rule.rule_id}
                  apiKey={apiKey}
                  rule={rule}
                  index={index}
                  count={rules.length}
                  moving={order.busy}
                  onMove={(delta) => move(index, delta)}
                  onChanged={refresh}
                />
              ))}
            </ol>
          )}
          <ErrorNote error={order.error} />
          <AddRule apiKey={apiKey} ruleIds={ruleIds} rulesetId={rulesetId} onAdded={refresh} />
          <ConfirmButton
            verb="Delete"
            what={ruleset.name}
            question="Delete this ruleset? Its rules stay; this cannot be undone."
            onConfirm={async () => {
              await deleteRuleset(apiKey, rulesetId);
              route("/console/rulesets");
            }}
          />
        </>
      )}
    </section>
  );
}

/**
 * "Add rule": the rule is made (named after its text), then put last in the
 * ruleset's `rule_ids`. Should that refuse (a ruleset holds at most 100), the
 * rule just made is deleted again, so nothing is left behind.
 */
function AddRule({
  apiKey,
  rulesetId,
  ruleIds,
  onAdded,
}: {
  apiKey: string;
  rulesetId: string;
  ruleIds: string[];
  onAdded: () => Promise<void>;
}) {
  const [text, setText] = useState("");
  const { busy, error, run } = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const added = await run(async () => {
      const rule = await createRule(apiKey, { name: ruleNameOf(text), rule: text });
      try {
        await updateRuleset(apiKey, rulesetId, { rule_ids: [...ruleIds, rule.rule_id] });
      } catch (e) {
        await deleteRule(apiKey, rule.rule_id).catch(() => undefined);
        throw e;
      }
      await onAdded();
    });
    if (added) setText("");
  };
  return (
    <form onSubmit={submit} aria-label="Add a rule">
      <TextField id="new-rule" label="New rule" multiline required value={text} onValue={setText} />
      <button type="submit" disabled={busy}>
        Add rule
      </button>
      <ErrorNote error={error} />
    </form>
  );
}
