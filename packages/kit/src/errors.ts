import { Code, ConnectError } from "@connectrpc/connect";
import { FieldViolationsSchema, type FieldViolation } from "@loom/proto/common/v1/common_pb";
import { create } from "@bufbuild/protobuf";

/** INVALID_ARGUMENT with one detail entry per problem, as the gateway reports them. */
export function invalidArgument(violations: Array<Pick<FieldViolation, "path" | "message">>): ConnectError {
  const summary = violations.map((v) => `${v.path}: ${v.message}`).join("; ");
  return new ConnectError(summary || "invalid argument", Code.InvalidArgument, undefined, [
    { desc: FieldViolationsSchema, value: create(FieldViolationsSchema, { violations }) },
  ]);
}

export function notFound(what: string): ConnectError {
  return new ConnectError(`${what} not found`, Code.NotFound);
}

export function permissionDenied(message: string): ConnectError {
  return new ConnectError(message, Code.PermissionDenied);
}

export function unauthenticated(message = "missing or invalid credential"): ConnectError {
  return new ConnectError(message, Code.Unauthenticated);
}

export function unavailable(message: string): ConnectError {
  return new ConnectError(message, Code.Unavailable);
}

/** The field problems carried by an INVALID_ARGUMENT error, if any. */
export function fieldViolationsOf(error: ConnectError): FieldViolation[] {
  return error.findDetails(FieldViolationsSchema).flatMap((d) => d.violations);
}

/**
 * True for failures of a dependency that are worth retrying later (database
 * or bus unreachable), judged by the drivers' error class names so that this
 * module needs neither driver. The MongoDB driver reports a connection lost
 * during insertMany as a MongoBulkWriteError holding the network error (its
 * `errorResponse`), so wrapped errors are looked into too.
 */
export function isDependencyDown(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 3) return false;
  const down =
    /^(MongoServerSelectionError|MongoNetworkError|MongoNetworkTimeoutError|MongoNotConnectedError|MongoTopologyClosedError|MongoPoolClearedError)$/.test(error.name) ||
    // A socket the other side closed under a write (EPIPE) reaches us from the driver unwrapped.
    /^(EPIPE|ECONNRESET|ECONNREFUSED)$|CONNECTION_CLOSED|DISCONNECT|Timeout/i.test(String((error as { code?: unknown }).code ?? ""));
  return down || isDependencyDown((error as { errorResponse?: unknown }).errorResponse ?? error.cause, depth + 1);
}
