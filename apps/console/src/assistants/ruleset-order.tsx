import { MoveButtons, moved } from "../ui/move-buttons.tsx";

/**
 * The picked rulesets in the order their rules reach the model
 * (`ruleset_ids`): a newly picked one goes last, and each moves up or down.
 */
export function RulesetOrder({
  ids,
  names,
  onOrder,
}: {
  ids: readonly string[];
  names: Readonly<Record<string, string>>;
  onOrder: (ids: string[]) => void;
}) {
  if (ids.length === 0) return null;
  return (
    <div class="order">
      <p id="ruleset-order-heading">Ruleset order: their rules reach the model in this order.</p>
      <ol aria-labelledby="ruleset-order-heading">
        {ids.map((id, index) => {
          // Until its name has loaded, a ruleset is shown by its id.
          const name = names[id] ?? id;
          return (
            <li key={id}>
              <span class="name">{name}</span>
              <MoveButtons what={name} index={index} count={ids.length} onMove={(d) => onOrder(moved(ids, index, d))} />
            </li>
          );
        })}
      </ol>
    </div>
  );
}
