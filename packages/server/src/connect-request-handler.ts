import type { IncomingMessage, ServerResponse } from "node:http";
import { Code, ConnectError, type ConnectRouter, createConnectRouter, type Interceptor } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip, connectNodeAdapter } from "@connectrpc/connect-node";

export interface ConnectRequestHandlerOptions {
  routes: (router: ConnectRouter) => void;
  interceptors: Interceptor[];
}

/**
 * Serves Connect RPCs on a Node HTTP server. A unary call in the Connect
 * protocol (what Loom's own clients send) takes a short path: its body is
 * read into one buffer, handed to Connect's handler as bytes, and the answer
 * written with one `end`; its signal is aborted only if the client goes away
 * first. Everything else — streams, gRPC and gRPC-web, compressed bodies —
 * goes through connect-node's own adapter. Connect's handler does the
 * protocol either way (docs/decisions.md, "The RPC hop").
 */
export function connectRequestHandler(
  options: ConnectRequestHandlerOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  // Both paths with the options connect-node's adapter defaults to: a client that accepts gzip gets it on either.
  const settings = { interceptors: options.interceptors, acceptCompression: [compressionGzip, compressionBrotli] };
  const router = createConnectRouter(settings);
  options.routes(router);
  const unary = new Map<string, UniversalHandler>();
  for (const handler of router.handlers)
    if (handler.method.methodKind === "unary") unary.set(handler.requestPath, handler);
  const general = connectNodeAdapter({ ...settings, routes: options.routes });
  return (req, res) => {
    const handler = unary.get(req.url ?? "");
    const type = req.headers["content-type"];
    if (
      !handler ||
      req.method !== "POST" ||
      (type !== "application/proto" && type !== "application/json") ||
      req.headers["content-encoding"] !== undefined
    )
      return general(req, res);
    serveUnary(handler, req, res);
  };
}

function serveUnary(handler: UniversalHandler, req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.once("error", () => res.destroy());
  req.once("end", () => {
    const gone = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) gone.abort(new ConnectError("the client went away", Code.Canceled));
    });
    const universal: UniversalServerRequest = {
      httpVersion: req.httpVersion,
      method: "POST",
      url: `http://${req.headers.host ?? "localhost"}${req.url}`,
      header: webHeaders(req),
      // Connect's unary handler takes a body already read as bytes.
      body: (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)) as unknown as UniversalServerRequest["body"],
      signal: gone.signal,
    };
    handler(universal)
      .then(async (answer) => {
        const body: Uint8Array[] = [];
        if (answer.body) for await (const chunk of answer.body) body.push(chunk);
        const head: Record<string, string> = {};
        answer.header?.forEach((value, key) => {
          head[key] = value;
        });
        res.writeHead(answer.status, head).end(body.length === 1 ? body[0] : Buffer.concat(body));
      })
      .catch(() => res.destroy());
  });
}

function webHeaders(req: IncomingMessage): Headers {
  const header = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) header.append(raw[i]!, raw[i + 1]!);
  return header;
}
