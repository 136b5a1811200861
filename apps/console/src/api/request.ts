/**
 * The public API, same origin, with the signed-in key: every screen's calls go
 * through `request`, and an error answer becomes an ApiError carrying the API's
 * own message. Each feature folder has its own `api.ts` with its calls.
 */

export interface Pagination {
  page_number: number;
  page_size: number;
  total_count: number;
  total_pages: number;
  next_page?: number;
  previous_page?: number;
}

/** What a caught error says, for a person to read. */
export const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The message a person reads: the API's own (ErrorBody `errors[].message`), else the HTTP status line. */
export function errorMessage(status: number, statusText: string, bodyText: string): string {
  try {
    const body = JSON.parse(bodyText) as { errors?: { message?: string }[] };
    const messages = (body.errors ?? []).map((e) => e.message).filter((m): m is string => Boolean(m));
    if (messages.length > 0) return messages.join("; ");
  } catch {
    // Not JSON (a proxy's page, say): the status line says what happened.
  }
  return `${status} ${statusText}`.trim();
}

export async function errorOf(response: Response): Promise<ApiError> {
  return new ApiError(response.status, errorMessage(response.status, response.statusText, await response.text()));
}

/** The headers every call carries: the key, and a JSON type when there is a body. */
export const headersFor = (key: string, hasBody: boolean): Record<string, string> => ({
  authorization: `Bearer ${key}`,
  ...(hasBody ? { "content-type": "application/json" } : {}),
});

export async function request<T>(key: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method,
    headers: headersFor(key, body !== undefined),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw await errorOf(response);
  return (response.status === 204 ? undefined : await response.json()) as T;
}

/** A path segment: ids and names go into paths escaped, whatever they hold. */
export const segment = encodeURIComponent;

/** The query string of a page of a list. */
export const pageQuery = (page: number, pageSize: number) => `page=${page}&page_size=${pageSize}`;
