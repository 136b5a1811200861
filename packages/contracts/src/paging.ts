import { invalidArgument } from "./errors.ts";

/** Page bounds of semantics.md §4, shared by every page-numbered list. */
export const pageBounds = { defaultPage: 1, defaultPageSize: 20, maxPageSize: 100 } as const;

export interface PageWindow {
  page: number;
  pageSize: number;
  skip: number;
}

/** A service's re-check of the paging the gateway validated; 0 means "default". */
export function pageWindow(page: { page: number; pageSize: number } | undefined): PageWindow {
  const number = page?.page || pageBounds.defaultPage;
  const size = page?.pageSize || pageBounds.defaultPageSize;
  if (number < 1) throw invalidArgument([{ path: "query.page", message: "must be at least 1" }]);
  if (size < 1 || size > pageBounds.maxPageSize) {
    throw invalidArgument([{ path: "query.page_size", message: `must be between 1 and ${pageBounds.maxPageSize}` }]);
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
