import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";
import type { PageInfo } from "@loom/proto/common/v1/common_pb";

/**
 * RFC 3339, UTC, milliseconds (docs/behaviour.md §1). A required time missing from
 * a service's answer is a bug to report (500), never a made-up 1970 date.
 */
export function isoTime(ts: Timestamp | undefined): string {
  if (!ts) throw new Error("a service answered without a required timestamp");
  return timestampDate(ts).toISOString();
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
