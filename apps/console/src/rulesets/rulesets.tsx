import { OpensForm } from "../ui/opens-form.tsx";
import { PagedItems } from "../ui/paged-items.tsx";
import { usePagedList } from "../ui/use-paged-list.ts";
import { createRuleset, listRulesets } from "./api.ts";
import { RulesetForm } from "./ruleset-form.tsx";

/** The organization's rulesets, a page at a time, each opening its page; a form to add one. */
export function Rulesets({ apiKey }: { apiKey: string }) {
  const { view, reload } = usePagedList("rulesets", (page, size) => listRulesets(apiKey, page, size), [apiKey]);

  return (
    <section aria-labelledby="rulesets-heading">
      <h1 id="rulesets-heading">Rulesets</h1>
      <OpensForm label="New ruleset" onDone={reload}>
        {(form) => (
          <RulesetForm
            {...form}
            onSubmit={({ name, alias, description }) =>
              // Left empty, the alias and the description are not sent: the ruleset has none.
              createRuleset(apiKey, { name, ...(alias ? { alias } : {}), ...(description ? { description } : {}) })
            }
          />
        )}
      </OpensForm>
      <PagedItems
        label="Rulesets"
        {...view}
        empty="No rulesets yet."
        item={(ruleset) => (
          <li key={ruleset.ruleset_id}>
            {/* Text, never markup: names are whatever their authors typed. */}
            <a class="name" href={`/console/rulesets/${ruleset.ruleset_id}`}>
              {ruleset.name}
            </a>
            <span class="description">
              {ruleset.rule_ids.length === 1 ? "1 rule" : `${ruleset.rule_ids.length} rules`}
              {ruleset.alias && `, alias ${ruleset.alias}`}
            </span>
            {ruleset.description && <span class="description">{ruleset.description}</span>}
          </li>
        )}
      />
    </section>
  );
}
