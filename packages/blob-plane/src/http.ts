import { timingSafeEqual } from "node:crypto";
import {
  Agent,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import { pipeline } from "node:stream/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import { unavailableIfDown } from "@loom/runtime/dependency-down";
import { clientGoneSignal } from "@loom/server/client-gone";
import { principalHeaders } from "@loom/server/principal";
import type { Logger } from "@loom/telemetry/logger";
import { codeOfHttpStatus, errorFromJsonBytes, errorJsonBytes, httpStatusOf } from "./connect-error-json.ts";
import { type BlobRequest, type BlobResponse, blobPathPrefix, type ServeBlob } from "./exchange.ts";

/**
 * The blob data plane over plain HTTP between the gateway and the storage
 * service: `blobHttpHandler` serves a `ServeBlob` on the storage service's
 * port, `remoteBlobs` is the gateway's `ServeBlob` that calls it. Bytes
 * stream both ways; failures travel as Connect's unary JSON error (its status
 * per code; `connect-error-json.ts`), so the gateway gets back the very
 * ConnectError the storage service raised and maps it with its one table.
 */

const blobMethods = new Set<BlobRequest["method"]>(["GET", "HEAD", "PUT"]);

/** Headers that belong to one connection, never forwarded (RFC 9110 §7.6.1), plus those the connection names. */
const hopByHop = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function endToEnd(headers: IncomingHttpHeaders): Map<string, string | string[]> {
  const named = String(headers.connection ?? "")
    .split(",")
    .map((name) => name.trim().toLowerCase());
  const kept = new Map<string, string | string[]>();
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !hopByHop.has(name) && !named.includes(name)) kept.set(name, value);
  }
  return kept;
}

/** Connect's unary error answer: the status of the code, the error's metadata as headers, the JSON body. */
function writeConnectError(res: ServerResponse, error: ConnectError): void {
  const body = errorJsonBytes(error);
  const headers: OutgoingHttpHeaders = {};
  error.metadata.forEach((value, name) => {
    if (!hopByHop.has(name)) headers[name] = value;
  });
  res
    .writeHead(httpStatusOf(error.code), {
      ...headers,
      "content-type": "application/json",
      "content-length": body.byteLength,
    })
    .end(body);
}

/**
 * The storage service's side: serves `serve` to callers that hold the
 * service token (401 otherwise, compared in constant time), for requests
 * under `blobPathPrefix`. A ConnectError becomes Connect's JSON error; any
 * other failure is logged and answered as INTERNAL, without its message.
 */
export function blobHttpHandler(
  serve: ServeBlob,
  serviceToken: string,
  logger: Logger,
): (req: IncomingMessage, res: ServerResponse) => void {
  const expected = Buffer.from(serviceToken);
  const trusted = (req: IncomingMessage) => {
    const given = Buffer.from(String(req.headers[principalHeaders.serviceToken] ?? ""));
    return given.length === expected.length && timingSafeEqual(given, expected);
  };

  async function answer(req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
    if (!trusted(req)) throw new ConnectError("missing or wrong service token", Code.Unauthenticated);
    const method = req.method as BlobRequest["method"];
    if (!blobMethods.has(method))
      throw new ConnectError(`${req.method} is not served on blob paths`, Code.Unimplemented);
    const path = (req.url ?? "").split("?", 1)[0]!;
    const { [principalHeaders.serviceToken]: _, ...headers } = req.headers;
    const answer = await serve({
      method,
      token: path.slice(blobPathPrefix.length),
      headers,
      body: method === "PUT" ? req : undefined,
      signal,
    });
    writeAnswer(req, res, answer);
    if (answer.body && method !== "HEAD") await pipeline(answer.body, res);
    else answer.body?.destroy();
  }

  return (req, res) => {
    const signal = clientGoneSignal(res);
    answer(req, res, signal).catch((error: unknown) => {
      if (res.headersSent) {
        // Mid-stream: the caller sees a cut answer, which is what happened.
        if (!signal.aborted) logger.warn({ err: error }, "a blob answer broke off");
        res.destroy();
        return;
      }
      if (!(error instanceof ConnectError)) logger.error({ err: error }, "a blob request failed");
      const answered = unavailableIfDown(error);
      // An upload refused before it was read whole keeps its connection: Node
      // reads and drops the rest until the gateway, having read this answer,
      // cuts it. Closing here would reset the connection under the gateway
      // while it is still sending, before it could read why.
      writeConnectError(
        res,
        answered instanceof ConnectError ? answered : new ConnectError("internal error", Code.Internal),
      );
    });
  };
}

function writeAnswer(req: IncomingMessage, res: ServerResponse, answer: BlobResponse): void {
  res.writeHead(answer.status, answer.headers);
  if (!answer.body || req.method === "HEAD") res.end();
}

/** The most of an error answer's body read back; Connect errors are small. */
const maxErrorBytes = 64 * 1024;

/** Statuses that never have a body (and HEAD answers have none either). */
const bodiless = new Set([204, 304]);

function readSome(res: IncomingMessage, limit: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on("data", (chunk: Buffer) => {
      if (size < limit) chunks.push(chunk);
      size += chunk.length;
    });
    res.once("end", () => resolve(Buffer.concat(chunks).subarray(0, limit)));
    res.once("error", reject);
  });
}

/**
 * The ConnectError of a Connect JSON error answer; from the status alone when
 * its body says nothing (an answer to HEAD has none).
 */
function connectErrorOf(status: number, headers: IncomingHttpHeaders, bytes: Uint8Array): ConnectError {
  const metadata = new Headers();
  for (const [name, value] of endToEnd(headers)) metadata.set(name, Array.isArray(value) ? value.join(", ") : value);
  const code = codeOfHttpStatus(status);
  return (
    errorFromJsonBytes(bytes, metadata, code) ??
    new ConnectError(`the storage service answered ${status}`, code, metadata)
  );
}

/**
 * The gateway's `ServeBlob` over HTTP to the storage service at `baseUrl`:
 * the request's end-to-end headers and body go there as a stream (the
 * caller's credentials and Loom's own `x-loom-*` headers stay behind), the
 * answer comes back as a stream, with backpressure both ways. An error
 * answer in Connect's JSON becomes the ConnectError it carries; a storage
 * service that cannot be reached is UNAVAILABLE. Aborting the signal cuts
 * the exchange, and the storage service sees its caller go.
 */
export function remoteBlobs(baseUrl: string, serviceToken: string): ServeBlob {
  const base = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true });
  return (blob) =>
    new Promise<BlobResponse>((resolve, reject) => {
      const { signal } = blob;
      if (signal.aborted) return reject(signal.reason);
      const headers: OutgoingHttpHeaders = {};
      for (const [name, value] of endToEnd(blob.headers)) {
        if (
          name !== "host" &&
          name !== "expect" &&
          name !== "authorization" &&
          name !== "cookie" &&
          !name.startsWith("x-loom-")
        )
          headers[name] = value;
      }
      headers[principalHeaders.serviceToken] = serviceToken;
      let settled = false;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        outcome();
      };
      const req = httpRequest({
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port,
        // Escaped where a request line cannot carry a character as it is (no token has one: it is refused there).
        path: `${base.pathname.replace(/\/$/, "")}${blobPathPrefix}${blob.token.replace(/[^\x21-\x7e]/gu, encodeURIComponent)}`,
        method: blob.method,
        headers,
        agent,
      });
      const onAbort = () => {
        req.destroy(signal.reason as Error);
        settle(() => reject(signal.reason));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      req.once("close", () => signal.removeEventListener("abort", onAbort));
      // `on`, not `once`: a socket may report more than one failure, and an unheard one would crash the process.
      req.on("error", (error) => {
        settle(() =>
          reject(
            error instanceof ConnectError
              ? error
              : new ConnectError("the storage service is unavailable", Code.Unavailable, undefined, undefined, error),
          ),
        );
      });
      req.once("response", (res) => {
        const status = res.statusCode ?? 500;
        if (status >= 400 && /^application\/json\b/.test(res.headers["content-type"] ?? "")) {
          // Refused, perhaps before the upload was sent whole: stop sending it.
          blob.body?.unpipe(req);
          readSome(res, maxErrorBytes).then(
            (bytes) => {
              req.destroy();
              settle(() => reject(connectErrorOf(status, res.headers, bytes)));
            },
            (error: unknown) => settle(() => reject(error)),
          );
          return;
        }
        const answerHeaders: Record<string, string> = {};
        for (const [name, value] of endToEnd(res.headers))
          answerHeaders[name] = Array.isArray(value) ? value.join(", ") : value;
        const hasBody = blob.method !== "HEAD" && !bodiless.has(status);
        if (!hasBody) res.resume();
        settle(() => resolve({ status, headers: answerHeaders, body: hasBody ? res : undefined }));
      });
      if (blob.body) {
        blob.body.pipe(req);
        // The caller's upload broke off: so does this one, and the storage service sees it go.
        blob.body.on("error", (error) => {
          req.destroy();
          settle(() => reject(new ConnectError("the upload broke off", Code.Canceled, undefined, undefined, error)));
        });
      } else req.end();
    });
}
