import { invalidArgument } from "./errors.ts";

/** Page bounds of docs/behaviour.md §4, shared by every page-numbered list. */
export const pageBounds = { defaultPage: 1, defaultPageSize: 20, maxPageSize: 100 } as const;

export interface PageWindow {
  page: number;
  pageSize: number;
  skip: number;
}

/**
 * A service's re-check of the paging the gateway validated; 0 means "default".
 * `maxPageSize` is for a list that the gateway may ask for whole (a thread's messages).
 */
export function pageWindow(
  page: { page: number; pageSize: number } | undefined,
  maxPageSize: number = pageBounds.maxPageSize,
): PageWindow {
  const number = page?.page || pageBounds.defaultPage;
  const size = page?.pageSize || pageBounds.defaultPageSize;
  if (number < 1) throw invalidArgument([{ path: "query.page", message: "must be at least 1" }]);
  if (size < 1 || size > maxPageSize) {
    throw invalidArgument([{ path: "query.page_size", message: `must be between 1 and ${maxPageSize}` }]);
  }
  return { page: number, pageSize: size, skip: (number - 1) * size };
}

export function pageInfo(window: PageWindow, totalCount: number) {
  return {
    pageNumber: window.page,
    pageSize: window.pageSize,
    totalCount: BigInt(totalCount),
    totalPages: Math.ceil(totalCount / window.pageSize),
  };
}

/** One page of a list, with the count of the whole list. */
export interface Page<T> {
  items: T[];
  totalCount: number;
}
