import type { Pagination } from "../api/request.ts";
import { PagedItems } from "./paged-items.tsx";
import { usePagedList } from "./use-paged-list.ts";

/**
 * Some of an organization's items, picked with checkboxes (each labelled with
 * the item's name) in a group named `legend`. The items come a page at a time,
 * as every list does; what is picked is a list of ids kept by the caller, so a
 * choice made on one page stays while another is shown, and the count says
 * how many are picked in all.
 */
export function CheckboxPicker<K extends string, T>({
  legend,
  itemsKey,
  fetchPage,
  deps,
  idOf,
  nameOf,
  picked,
  onToggle,
}: {
  legend: string;
  /** Where the list's answer holds its items (`rulesets`, `tools`…). */
  itemsKey: K;
  fetchPage: (page: number, pageSize: number) => Promise<{ [k in K]: T[] } & { pagination: Pagination }>;
  deps: unknown[];
  idOf: (item: T) => string;
  nameOf: (item: T) => string;
  picked: readonly string[];
  onToggle: (item: T, checked: boolean) => void;
}) {
  const { view } = usePagedList(itemsKey, fetchPage, deps);
  const idPrefix = `pick-${legend.toLowerCase().replace(/\W+/g, "-")}`;
  return (
    <fieldset class="picker">
      <legend>{legend}</legend>
      <p>{picked.length} picked</p>
      <PagedItems
        {...view}
        label={legend}
        empty={`No ${legend.toLowerCase()} yet.`}
        item={(item) => {
          const id = idOf(item);
          return (
            <li key={id}>
              <input
                type="checkbox"
                id={`${idPrefix}-${id}`}
                checked={picked.includes(id)}
                onChange={(e) => onToggle(item, e.currentTarget.checked)}
              />
              {/* Text, never markup: a name is whatever its author typed. */}
              <label for={`${idPrefix}-${id}`}>{nameOf(item)}</label>
            </li>
          );
        }}
      />
    </fieldset>
  );
}
