import {
  create,
  type DescMessage,
  type DescMethod,
  type DescMethodStreaming,
  type DescMethodUnary,
  isMessage,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createContextValues,
  createHandlerContext,
  createMethodImplSpec,
  createServiceImplSpec,
  type Interceptor,
  type MethodImplSpec,
  type StreamResponse,
  type Transport,
  type UnaryResponse,
} from "@connectrpc/connect";
import { invokeUnaryImplementation, transformInvokeImplementation } from "@connectrpc/connect/protocol";
import { principalHeaders } from "./principal.ts";
import type { RpcService } from "./rpc-service.ts";

/**
 * A Connect transport that calls service implementations in this process
 * directly: the same contracts, handler contexts and server interceptors as
 * over HTTP (service token, principal, error sanitizing, call log), without
 * serializing messages or running Connect's protocol machinery. Connect's own
 * router transport does both: a unary call through it costs ~16 times as much
 * (docs/benchmarks.md, "Calls inside one process"), which is why this keeps
 * Connect's two internal functions below (docs/decisions.md, "Connect
 * internals: owned, or kept where it pays").
 *
 * Messages are handed over, not copied: callers build a fresh request per call
 * and treat answers as read-only, as they would decoded ones.
 */
export function directTransport(services: RpcService[], serviceToken: string, interceptors: Interceptor[]): Transport {
  const specs = implementationsOf(services);
  const specFor = (method: DescMethod): MethodImplSpec => {
    const spec = specs.get(methodKey(method));
    if (!spec)
      throw new ConnectError(
        `${method.parent.typeName}/${method.name} is not served in this process`,
        Code.Unimplemented,
      );
    return spec;
  };
  // The caller's context values stay on the caller's side, as over HTTP: the
  // service starts from fresh ones (a principal set for one call cannot leak
  // into the next call that shares them).
  const contextInit = (method: DescMethod) => ({
    service: method.parent,
    method,
    protocolName: "in-process",
    requestMethod: "POST",
    url: `in-process:/${method.parent.typeName}/${method.name}`,
  });
  const contextFor = (
    method: DescMethod,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    header: HeaderInit | undefined,
  ) =>
    createHandlerContext({
      ...contextInit(method),
      requestHeader: withServiceToken(header, serviceToken),
      requestSignal: signal,
      timeoutMs,
    });
  /**
   * A unary call without a deadline needs no signal of its own: the caller's
   * (or, without one, a fresh one that is never aborted) is the call's, and
   * nothing is left to clean up after it. createHandlerContext would link
   * three AbortControllers and abort one on every finish (docs/benchmarks.md,
   * "Calls inside one process").
   */
  const unaryContext = (
    method: DescMethod,
    signal: AbortSignal | undefined,
    header: HeaderInit | undefined,
  ): HandlerContextController => ({
    ...contextInit(method),
    signal: signal ?? new AbortController().signal,
    timeoutMs: () => undefined,
    requestHeader: new Headers(withServiceToken(header, serviceToken)),
    responseHeader: new Headers(),
    responseTrailer: new Headers(),
    values: createContextValues(),
    abort() {},
  });

  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeaderInit | undefined,
      input: MessageInitShape<I>,
    ): Promise<UnaryResponse<I, O>> {
      const context =
        timeoutMs === undefined ? unaryContext(method, signal, header) : contextFor(method, signal, timeoutMs, header);
      try {
        const spec = specFor(method);
        if (spec.kind !== "unary") throw new ConnectError(`${method.name} is not unary`, Code.Internal);
        const message = await untilAborted(
          invokeUnaryImplementation(spec, context, toMessage(method.input, input), interceptors),
          context.signal,
        );
        return {
          stream: false,
          service: method.parent,
          method,
          header: context.responseHeader,
          trailer: context.responseTrailer,
          message: message as MessageShape<O>,
        };
      } catch (error) {
        throw ConnectError.from(error);
      } finally {
        // Stops a deadline timer and unlinks the caller's signal. A reason is
        // given: abort() without one builds a DOMException with a stack.
        context.abort(callFinished);
      }
    },

    async stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeaderInit | undefined,
      input: AsyncIterable<MessageInitShape<I>>,
    ): Promise<StreamResponse<I, O>> {
      const context = contextFor(method, signal, timeoutMs, header);
      const invoke = transformInvokeImplementation(specFor(method), context, interceptors);
      const output = invoke(messagesOf(method.input, input)) as AsyncIterable<MessageShape<O>>;
      return {
        stream: true,
        service: method.parent,
        method,
        header: context.responseHeader,
        trailer: context.responseTrailer,
        message: untilCancelled(output, context.signal, () => context.abort(callFinished)),
      };
    },
  };
}

type HeaderInit = ConstructorParameters<typeof Headers>[0];
type HandlerContextController = ReturnType<typeof createHandlerContext>;

/**
 * The caller's headers plus the service token, as one init for the context's
 * Headers (which copies it once): a plain record, the usual case, is spread
 * instead of being built into Headers twice.
 */
function withServiceToken(header: HeaderInit | undefined, serviceToken: string): HeaderInit {
  if (header === undefined || !(Symbol.iterator in header)) {
    return { ...(header as Record<string, string> | undefined), [principalHeaders.serviceToken]: serviceToken };
  }
  const copy = new Headers(header);
  copy.set(principalHeaders.serviceToken, serviceToken);
  return copy;
}

const callFinished = new ConnectError("the call finished", Code.Canceled);

/** The implementations services register, collected instead of mounted as HTTP handlers. */
function implementationsOf(services: RpcService[]): Map<string, MethodImplSpec> {
  const specs = new Map<string, MethodImplSpec>();
  const router: ConnectRouter = {
    handlers: [],
    service(service, implementation) {
      const spec = createServiceImplSpec(service, implementation);
      for (const method of service.methods) specs.set(methodKey(method), spec.methods[method.localName]!);
      return router;
    },
    rpc(method, implementation) {
      specs.set(methodKey(method), createMethodImplSpec(method, implementation));
      return router;
    },
  };
  for (const service of services) service.routes(router);
  return specs;
}

function methodKey(method: DescMethod): string {
  return `${method.parent.typeName}/${method.name}`;
}

function toMessage<I extends DescMessage>(schema: I, input: MessageInitShape<I>): MessageShape<I> {
  return isMessage(input, schema) ? input : create(schema, input);
}

async function* messagesOf<I extends DescMessage>(
  schema: I,
  input: AsyncIterable<MessageInitShape<I>>,
): AsyncIterable<MessageShape<I>> {
  for await (const item of input) yield toMessage(schema, item);
}

/**
 * The implementation's messages until it ends, fails, or the call is
 * cancelled (the caller's signal, a deadline). One abort listener for the
 * whole stream: a listener added and removed per message cost more than the
 * message itself.
 */
function untilCancelled<T>(output: AsyncIterable<T>, signal: AbortSignal, finish: () => void): AsyncIterable<T> {
  const iterator = output[Symbol.asyncIterator]();
  let done = false;
  /** Fails the `next` in progress, if any. */
  let failNext: ((error: unknown) => void) | undefined;
  const onAbort = () => failNext?.(abortError(signal));
  signal.addEventListener("abort", onAbort, { once: true });
  const end = () => {
    if (done) return;
    done = true;
    signal.removeEventListener("abort", onAbort);
    finish();
    void iterator.return?.().catch(() => {});
  };
  return {
    [Symbol.asyncIterator]: () => ({
      async next(): Promise<IteratorResult<T>> {
        if (done) return { done: true, value: undefined };
        try {
          if (signal.aborted) throw abortError(signal);
          const result = await new Promise<IteratorResult<T>>((resolve, reject) => {
            failNext = reject;
            iterator.next().then(resolve, reject);
          });
          failNext = undefined;
          if (result.done) end();
          return result;
        } catch (error) {
          failNext = undefined;
          end();
          throw ConnectError.from(error);
        }
      },
      async return(): Promise<IteratorResult<T>> {
        end();
        return { done: true, value: undefined };
      },
    }),
  };
}

/**
 * The answer, or a CANCELED / DEADLINE_EXCEEDED error as soon as the signal
 * aborts: a caller that gives up is released at once, as over HTTP, even when
 * the implementation does not watch its signal.
 */
async function untilAborted<T>(answer: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) throw abortError(signal);
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([answer, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort!);
  }
}

function abortError(signal: AbortSignal): ConnectError {
  return ConnectError.from(signal.reason ?? new ConnectError("the call was cancelled", Code.Canceled), Code.Canceled);
}
