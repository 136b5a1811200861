import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type FieldViolation, FieldViolationsSchema } from "@loom/proto/common/v1/common_pb";

/** One problem with a request field, by its public path (`body.rule_ids[2]`, `body.server.url`). */
export type Violation = Pick<FieldViolation, "path" | "message">;

/** INVALID_ARGUMENT with one detail entry per problem, as the gateway reports them. */
export function invalidArgument(violations: Violation[]): ConnectError {
  const summary = violations.map((v) => `${v.path}: ${v.message}`).join("; ");
  return new ConnectError(summary || "invalid argument", Code.InvalidArgument, undefined, [
    { desc: FieldViolationsSchema, value: create(FieldViolationsSchema, { violations }) },
  ]);
}

export function notFound(what: string): ConnectError {
  return new ConnectError(`${what} not found`, Code.NotFound);
}

/** A request the current state refuses (the gateway answers 409 Conflict): the message says what to change first. */
export function failedPrecondition(message: string): ConnectError {
  return new ConnectError(message, Code.FailedPrecondition);
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
