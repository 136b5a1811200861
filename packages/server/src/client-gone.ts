import type { ServerResponse } from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";

/** Why a request's signal aborts when its client went away. */
const clientGone = new ConnectError("the client went away", Code.Canceled);

/**
 * A signal that aborts when the client goes away before its answer is
 * finished; not on a normal finish. With a reason built once: a bare abort()
 * builds a DOMException with a stack, which a crowd of streams closing at
 * once pays for each.
 */
export function clientGoneSignal(res: ServerResponse): AbortSignal {
  const abort = new AbortController();
  abortWhenClientGone(res, abort);
  return abort.signal;
}

/** Aborts `controller` when the client goes away before its answer is finished, as clientGoneSignal's. */
export function abortWhenClientGone(res: ServerResponse, controller: AbortController): void {
  res.once("close", () => {
    if (!res.writableFinished) controller.abort(clientGone);
  });
}
