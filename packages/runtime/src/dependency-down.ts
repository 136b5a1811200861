import { ConnectError } from "@connectrpc/connect";
import { unavailable } from "@loom/contracts/errors";
import { errors as natsErrors } from "@nats-io/nats-core";

/**
 * A dependency that cannot be reached or answers that it cannot serve now,
 * as an adapter reports it when its SDK has no error class of its own for
 * that (the AWS SDK's timeouts are plain Errors named "TimeoutError"; a 5xx
 * is a service exception like any other): the adapter, which knows its SDK,
 * decides, and the original is the cause.
 */
export class DependencyDown extends Error {
  override name = "DependencyDown";
  constructor(dependency: string, options: { cause: unknown }) {
    super(`${dependency} is unavailable`, options);
  }
}

/**
 * UNAVAILABLE (retry later) for an error that is a dependency down or the
 * process out of descriptors (`isDependencyDown`), for the paths that answer
 * without the RPC interceptors (the blob data plane); any other error as it is.
 */
export function unavailableIfDown(error: unknown): unknown {
  return !(error instanceof ConnectError) && isDependencyDown(error)
    ? unavailable("a dependency is unavailable, try again later")
    : error;
}

/**
 * The NATS client's own classes for "the server cannot be reached": closed,
 * draining and lost connections and timeouts; and what adapters report as
 * `DependencyDown`. The MongoDB driver's are matched by `isMongoDown`.
 */
const dependencyDownClasses = [
  natsErrors.ClosedConnectionError,
  natsErrors.DrainingConnectionError,
  natsErrors.ConnectionError,
  natsErrors.TimeoutError,
  DependencyDown,
];

/**
 * True for failures of a dependency that are worth retrying later (database
 * or bus unreachable), by the drivers' error classes (the driver's cleared
 * pool is a network error too). The MongoDB driver reports a connection lost during insertMany as a MongoBulkWriteError
 * holding the network error (its `errorResponse`), so wrapped errors are
 * looked into too; and a socket the server closed under a write reaches us
 * from the driver as Node's own error (EPIPE, ECONNRESET), with no class of
 * its own, as do a refused connection and a host that cannot be resolved or
 * reached (what a Connect client wraps as the cause of its error).
 */
export function isDependencyDown(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 3) return false;
  if (dependencyDownClasses.some((kind) => error instanceof kind) || isMongoDown(error)) return true;
  // EMFILE/ENFILE: the process (or the system) is out of file descriptors for now; a retry later finds some.
  if (
    /^(EPIPE|ECONNRESET|ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EMFILE|ENFILE)$/.test(
      String((error as NodeJS.ErrnoException).code ?? ""),
    )
  )
    return true;
  return isDependencyDown((error as { errorResponse?: unknown }).errorResponse ?? error.cause, depth + 1);
}

/**
 * The MongoDB driver's classes for "the server cannot be reached", by their names along the error's class chain: as
 * `instanceof` would (a subclass such as MongoNetworkTimeoutError counts; an Error merely named so does not), without
 * importing the driver, which a process on SQLite never loads (docs/decisions.md, "Loading only what is used").
 */
const mongoDownClasses = new Set([
  "MongoNetworkError",
  "MongoServerSelectionError",
  "MongoNotConnectedError",
  "MongoTopologyClosedError",
]);

function isMongoDown(error: Error): boolean {
  for (let kind = Object.getPrototypeOf(error); kind && kind !== Error.prototype; kind = Object.getPrototypeOf(kind))
    if (mongoDownClasses.has(kind.constructor?.name)) return true;
  return false;
}
