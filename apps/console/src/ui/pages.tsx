import type { Pagination } from "../api/request.ts";

/** Previous and Next through a list the API pages, with where the reader is; `label` names it among others on a screen. */
export function Pages({
  pagination,
  onPage,
  label = "Pages",
}: {
  pagination: Pagination;
  onPage: (page: number) => void;
  label?: string;
}) {
  const page = pagination.page_number;
  return (
    <nav aria-label={label} class="pages">
      <button type="button" disabled={!pagination.previous_page} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span>
        Page {page} of {Math.max(pagination.total_pages, 1)}
      </span>
      <button type="button" disabled={!pagination.next_page} onClick={() => onPage(page + 1)}>
        Next
      </button>
    </nav>
  );
}
