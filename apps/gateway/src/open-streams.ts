import type { Readable } from "node:stream";
import { unauthenticated } from "@loom/contracts/errors";
import { abortWhenClientGone } from "@loom/server/client-gone";
import { rateLimitRefusals } from "@loom/telemetry/metrics";
import type { Context, Next } from "koa";
import { rateLimited } from "./errors.ts";
import type { Revocations } from "./revocations.ts";

const refusals = rateLimitRefusals.labels("streams");

/** Why a stream stops when its key is deleted: what its RPCs fail with, and what a chat stream's last frame says. */
const keyDeleted = () => unauthenticated("the API key was deleted");

/** Counts of open streams by a key (a credential, an organization). */
function createCounts() {
  const open = new Map<string, number>();
  return {
    count: (key: string) => open.get(key) ?? 0,
    add: (key: string) => void open.set(key, (open.get(key) ?? 0) + 1),
    remove(key: string): void {
      const left = open.get(key)! - 1;
      if (left === 0) open.delete(key);
      else open.set(key, left);
    },
  };
}

/**
 * The SSE streams open on this replica. At most `perCredential` at once per
 * credential and `perOrganization` per organization (one key cannot hold a
 * crowd of sockets and follows, nor can minting keys multiply that), else
 * 429. Runs before the stream's handler: a refused stream costs no RPC and
 * opens no upstream follow; the slots are given back when the response
 * closes, however it ends (the run's end, the client hanging up, an error
 * before streaming).
 *
 * A stream opened with an API key stops as soon as the key is deleted
 * (docs/behaviour.md §3: at once), on every replica that hears the revocation:
 * its `ctx.state.streamStop` aborts (as it does when the client goes away),
 * which the operation gives its calls as their signal. An event stream then
 * ends as a finished response (the client sees it close; its reconnection
 * gets the 401); one not yet answered is a 401.
 */
export function openStreams(options: { perCredential: number; perOrganization: number; revocations: Revocations }) {
  const { perCredential, perOrganization, revocations } = options;
  const byCredential = createCounts();
  const byOrganization = createCounts();
  /** API key id → the stops of its streams. */
  const stopsByKey = new Map<string, Set<AbortController>>();
  revocations.onRevoke((apiKeyId) => {
    const stops = stopsByKey.get(apiKeyId);
    if (!stops) return;
    stopsByKey.delete(apiKeyId);
    for (const stop of stops) stop.abort(keyDeleted());
  });

  return async (ctx: Context, next: Next) => {
    const credential = ctx.state.credentialKey as string;
    const organizationId = (ctx.state.principal as { organizationId: string }).organizationId;
    const apiKeyId = ctx.state.apiKeyId as string; // "" for an access token: it expires instead
    if (byCredential.count(credential) >= perCredential) {
      refusals.inc();
      throw rateLimited(`at most ${perCredential} event streams may be open at once per credential`);
    }
    if (byOrganization.count(organizationId) >= perOrganization) {
      refusals.inc();
      throw rateLimited(`at most ${perOrganization} event streams may be open at once per organization`);
    }
    const mark = revocations.mark();
    // Also the stream's signal for a client gone: the operation's calls need no second one joined to it.
    const stop = new AbortController();
    abortWhenClientGone(ctx.res, stop);
    ctx.state.streamStop = stop.signal;
    byCredential.add(credential);
    byOrganization.add(organizationId);
    if (apiKeyId) {
      let stops = stopsByKey.get(apiKeyId);
      if (!stops) stopsByKey.set(apiKeyId, (stops = new Set()));
      stops.add(stop);
    }
    // Node emits "close" once per response, whatever ended it.
    ctx.res.once("close", () => {
      byCredential.remove(credential);
      byOrganization.remove(organizationId);
      const stops = stopsByKey.get(apiKeyId);
      if (stops?.delete(stop) && stops.size === 0) stopsByKey.delete(apiKeyId);
    });
    await next();
    // Deleted after the handler's last call: nothing has been sent yet.
    if (apiKeyId && revocations.revokedSince(apiKeyId, mark)) {
      (ctx.body as Readable | undefined)?.destroy?.();
      throw keyDeleted();
    }
  };
}
