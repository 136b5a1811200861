import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { PageInfo } from "@loom/proto/common/v1/common_pb";

/** RFC 3339, UTC, milliseconds (semantics.md §1). */
export function isoTime(ts: Timestamp | undefined): string {
  return ts ? timestampDate(ts).toISOString() : new Date(0).toISOString();
}

/** The public Pagination object; next/previous only when that page exists. */
export function pagination(page: PageInfo | undefined) {
  const number = page?.pageNumber ?? 1;
  const totalPages = page?.totalPages ?? 0;
  return {
    page_number: number,
    page_size: page?.pageSize ?? 0,
    total_count: Number(page?.totalCount ?? 0n),
    total_pages: totalPages,
    ...(number < totalPages ? { next_page: number + 1 } : {}),
    ...(number > 1 && number - 1 <= totalPages ? { previous_page: number - 1 } : {}),
  };
}
