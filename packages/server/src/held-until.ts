import type { IncomingMessage, ServerResponse } from "node:http";

type Handler = (req: IncomingMessage, res: ServerResponse) => unknown;

/**
 * A request handler that holds the requests arriving before `started`
 * resolves, then handles them: a process listens before its start has
 * ended (so a taken port fails the start before identity bootstraps), and
 * a request in that moment must not find an API that lacks its first key.
 * A start that fails ends the process, and the requests held with it.
 */
export function heldUntil(started: Promise<void>, handler: Handler): Handler {
  let open = false;
  void started.then(() => (open = true));
  return (req, res) => (open ? handler(req, res) : started.then(() => handler(req, res)));
}
