import type { DescMessage, DescMethod, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import {
  appendHeaders,
  Code,
  ConnectError,
  type ContextValues,
  createContextValues,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import {
  createMethodSerializationLookup,
  createMethodUrl,
  runUnaryCall,
  type UniversalClientFn,
  validateReadWriteMaxBytes,
} from "@connectrpc/connect/protocol";
import {
  createTransport,
  errorFromJsonBytes,
  requestHeaderWithCompression,
  validateResponse,
} from "@connectrpc/connect/protocol-connect";
import { DependencyDown } from "@loom/runtime/dependency-down";
import { Pool } from "undici";

/**
 * Binary Connect to one service over a pool of keep-alive connections
 * (undici). A unary call — nearly every call Loom makes — is one request
 * written with its body and one answer read whole, through Connect's own
 * interceptors, headers, error decoding and serializers; streams go through
 * Connect's own transport over the same pool. connect-node's client made a
 * call to an empty handler cost four plain HTTP calls, in per-call async
 * iterables, promise races and error objects (docs/decisions.md, "The RPC hop").
 * No compression: calls stay inside the deployment.
 */
export function serviceTransport(baseUrl: string, interceptors: Interceptor[]): Transport {
  const pool = new Pool(new URL(baseUrl).origin);
  const limits = validateReadWriteMaxBytes(undefined, undefined, undefined);
  const streams = createTransport({
    ...limits,
    baseUrl,
    httpClient: poolClient(pool),
    useBinaryFormat: true,
    interceptors,
    acceptCompression: [],
    sendCompression: null,
  });
  // What a method's calls share, made on its first call.
  const methods = new WeakMap<
    DescMethod,
    { serialization: ReturnType<typeof createMethodSerializationLookup>; url: string; path: string }
  >();
  const perMethod = <I extends DescMessage, O extends DescMessage>(method: DescMethodUnary<I, O>) => {
    let kept = methods.get(method);
    if (!kept) {
      const url = createMethodUrl(baseUrl, method);
      kept = {
        serialization: createMethodSerializationLookup(method, undefined, undefined, limits),
        url,
        path: new URL(url).pathname,
      };
      methods.set(method, kept);
    }
    return kept as {
      serialization: ReturnType<typeof createMethodSerializationLookup<I, O>>;
      url: string;
      path: string;
    };
  };
  return {
    stream: streams.stream,
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: ConstructorParameters<typeof Headers>[0],
      message: MessageInitShape<I>,
      contextValues?: ContextValues,
    ) {
      const { serialization, url, path } = perMethod(method);
      const deadline = timeoutMs !== undefined && timeoutMs > 0 ? timeoutMs : undefined;
      return runUnaryCall<I, O>({
        interceptors,
        signal,
        timeoutMs: deadline,
        req: {
          stream: false,
          service: method.parent,
          method,
          requestMethod: "POST",
          url,
          header: requestHeaderWithCompression(method.methodKind, true, deadline, header, [], null, true),
          contextValues: contextValues ?? createContextValues(),
          message,
        },
        next: async (req) => {
          let status: number;
          let responseHeader: Headers;
          const trailer = new Headers();
          let bytes: Uint8Array;
          try {
            const res = await pool.request({
              path: req.url === url ? path : new URL(req.url).pathname,
              method: "POST",
              headers: headerRecord(req.header),
              body: serialization.getI(true).serialize(req.message),
              signal: req.signal,
            });
            status = res.statusCode;
            responseHeader = responseHeaders(res.headers, trailer);
            bytes = await res.body.bytes();
          } catch (error) {
            throw callError(error, req.signal);
          }
          const { isUnaryError, unaryError } = validateResponse(method.methodKind, true, status, responseHeader);
          if (isUnaryError) throw errorFromJsonBytes(bytes, appendHeaders(responseHeader, trailer), unaryError!);
          return {
            stream: false as const,
            service: method.parent,
            method,
            header: responseHeader,
            message: serialization.getO(true).parse(bytes),
            trailer,
          };
        },
      });
    },
  };
}

/** Connect's HTTP client for streams, over the pool: the request body sent as one buffer, the answer read as it comes. */
function poolClient(pool: Pool): UniversalClientFn {
  return async (req) => {
    const url = new URL(req.url);
    const chunks: Uint8Array[] = [];
    try {
      if (req.body) for await (const chunk of req.body) chunks.push(chunk);
      const res = await pool.request({
        path: url.pathname,
        method: "POST",
        headers: headerRecord(req.header),
        body: Buffer.concat(chunks),
        signal: req.signal,
      });
      return {
        status: res.statusCode,
        header: responseHeaders(res.headers),
        body: answerBody(res.body, req.signal),
        trailer: new Headers(),
      };
    } catch (error) {
      throw callError(error, req.signal);
    }
  };
}

async function* answerBody(body: AsyncIterable<Uint8Array>, signal?: AbortSignal): AsyncIterable<Uint8Array> {
  try {
    for await (const chunk of body) yield chunk;
  } catch (error) {
    throw callError(error, signal);
  }
}

function headerRecord(header: Headers): Record<string, string> {
  const record: Record<string, string> = {};
  header.forEach((value, key) => {
    record[key] = value;
  });
  return record;
}

/**
 * An answer's headers as Connect reads them. Given `trailer`, the `trailer-` headers go there without their
 * prefix, as Connect's `trailerDemux` does for a unary answer (a stream's trailers come in its last message).
 */
function responseHeaders(headers: Record<string, string | string[] | undefined>, trailer?: Headers): Headers {
  const header = new Headers();
  for (const key in headers) {
    const value = headers[key];
    if (value === undefined) continue;
    const [into, name] = trailer && key.startsWith("trailer-") ? [trailer, key.slice(8)] : [header, key];
    if (Array.isArray(value)) for (const v of value) into.append(name, v);
    else into.append(name, value);
  }
  return header;
}

/**
 * The caller's abort or deadline as its own reason; a connection that could not be made, or was lost, as a
 * dependency down, which `nameUnreachableService` turns into UNAVAILABLE naming the service; anything else as it is.
 */
function callError(error: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason;
  const code = String((error as { code?: unknown }).code ?? "");
  if (/^UND_ERR_(SOCKET|CONNECT_TIMEOUT|CLOSED|DESTROYED)$/.test(code))
    return new ConnectError(
      "the connection to the service was lost",
      Code.Unavailable,
      undefined,
      undefined,
      new DependencyDown("the service", { cause: error }),
    );
  return error;
}
