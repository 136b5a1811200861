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
  type StreamRequest,
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
      const spec = specFor(method);
      if (spec.kind === "server_streaming" && timeoutMs === undefined)
        return serverStream(spec, unaryContext(method, signal, header), input, interceptors);
      const context = contextFor(method, signal, timeoutMs, header);
      const invoke = transformInvokeImplementation(spec, context, interceptors);
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

/**
 * A server-streaming call without a deadline, the way a follow is called:
 * the request read from the caller's iterable once, the interceptors and the
 * implementation called directly, each message normalized as it passes. What
 * Connect's transformInvokeImplementation adds around that (its generators,
 * the request re-wrapped and checked for a second message, a normalizing
 * generator, linked AbortControllers) cost more than a short follow itself;
 * the caller's signal is the call's, as for unary calls.
 */
async function serverStream<I extends DescMessage, O extends DescMessage>(
  spec: Extract<MethodImplSpec, { kind: "server_streaming" }>,
  context: HandlerContextController,
  input: AsyncIterable<MessageInitShape<I>>,
  interceptors: Interceptor[],
): Promise<StreamResponse<I, O>> {
  const method = spec.method as DescMethodStreaming<I, O>;
  const common = { service: method.parent, header: context.responseHeader, trailer: context.responseTrailer };
  const implementation = async (req: StreamRequest): Promise<StreamResponse> => {
    const first = await req.message[Symbol.asyncIterator]().next();
    if (first.done)
      throw new ConnectError(`protocol error: missing input message for ${method.name}`, Code.Unimplemented);
    const request = toMessage(method.input, first.value as MessageInitShape<I>);
    const handlerContext = { ...context, requestHeader: req.header, signal: req.signal, values: req.contextValues };
    return {
      ...common,
      stream: true,
      method,
      message: spec.impl(request as never, handlerContext) as AsyncIterable<never>,
    };
  };
  try {
    const res = await withInterceptors(
      implementation,
      interceptors,
    )({
      stream: true,
      service: method.parent,
      method,
      requestMethod: context.requestMethod,
      url: context.url,
      signal: context.signal,
      header: context.requestHeader,
      contextValues: context.values,
      message: input,
    } as StreamRequest);
    copyHeaders(res.header, context.responseHeader);
    copyHeaders(res.trailer, context.responseTrailer);
    const output = res.message as AsyncIterable<MessageInitShape<O>>;
    return {
      stream: true,
      ...common,
      method,
      message: untilCancelled(
        output,
        context.signal,
        () => {},
        (m) => toMessage(method.output, m),
      ),
    };
  } catch (error) {
    throw ConnectError.from(error);
  }
}

/** The interceptors around `call`, the first outermost (as Connect applies them). */
function withInterceptors(
  call: (req: StreamRequest) => Promise<StreamResponse>,
  interceptors: Interceptor[],
): (req: StreamRequest) => Promise<StreamResponse> {
  return interceptors.reduceRight((next, interceptor) => interceptor(next as never) as unknown as typeof call, call);
}

function copyHeaders(from: Headers, to: Headers): void {
  if (from === to) return;
  for (const key of [...to.keys()]) to.delete(key);
  from.forEach((value, key) => to.set(key, value));
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
function untilCancelled<T, R = T>(
  output: AsyncIterable<T>,
  signal: AbortSignal,
  finish: () => void,
  normalize: (item: T) => R = (item) => item as unknown as R,
): AsyncIterable<R> {
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
      async next(): Promise<IteratorResult<R>> {
        if (done) return { done: true, value: undefined };
        try {
          if (signal.aborted) throw abortError(signal);
          const result = await new Promise<IteratorResult<T>>((resolve, reject) => {
            failNext = reject;
            iterator.next().then(resolve, reject);
          });
          failNext = undefined;
          if (result.done) {
            end();
            return result;
          }
          return { done: false, value: normalize(result.value) };
        } catch (error) {
          failNext = undefined;
          end();
          throw ConnectError.from(error);
        }
      },
      async return(): Promise<IteratorResult<R>> {
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
