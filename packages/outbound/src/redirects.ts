import { OutboundLimitExceeded } from "./errors.ts";
import type { OutboundFetch } from "./fetch.ts";

const redirects = new Set([301, 302, 303, 307, 308]);

/** Headers kept on a hop to another origin; the others may carry a tool's secrets (`Authorization`, API keys). */
const keptAcrossOrigins = new Set(["accept", "content-type", "user-agent"]);

/**
 * Follows up to `maxRedirects` redirects through an outbound fetch, so each hop's URL is checked like the first one
 * and a redirect to a refused address fails with `OutboundRefused`. Methods change as fetch changes them (303, and
 * 301/302 after a POST, become a GET without a body); a hop to another origin drops the caller's headers but a few
 * harmless ones.
 */
export async function fetchFollowingRedirects(
  fetch: OutboundFetch,
  input: string | URL,
  init: RequestInit = {},
  maxRedirects = 5,
): Promise<Response> {
  let url = new URL(input);
  let request = init;
  for (let hop = 0; ; hop++) {
    const response = await fetch(url, request);
    const location = response.headers.get("location");
    if (!redirects.has(response.status) || location === null) return response;
    await response.body?.cancel();
    if (hop === maxRedirects)
      throw new OutboundLimitExceeded("redirects", `${url.host} went past the limit of ${maxRedirects} redirects`);
    const next = new URL(location, url);
    request = nextRequest(request, response.status, next.origin !== url.origin);
    url = next;
  }
}

function nextRequest(init: RequestInit, status: number, crossOrigin: boolean): RequestInit {
  const method = (init.method ?? "GET").toUpperCase();
  const toGet = status === 303 ? method !== "HEAD" : (status === 301 || status === 302) && method === "POST";
  const headers = new Headers(init.headers);
  if (toGet)
    for (const name of ["content-type", "content-length", "content-encoding", "content-language"]) headers.delete(name);
  if (crossOrigin) for (const name of [...headers.keys()]) if (!keptAcrossOrigins.has(name)) headers.delete(name);
  return toGet ? { ...init, method: "GET", body: null, headers } : { ...init, headers };
}
