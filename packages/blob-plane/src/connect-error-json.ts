import { create, type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";

/**
 * Connect's unary error answer, as the Connect protocol documents it: an
 * HTTP status per code, and a JSON body `{"code", "message", "details"}`
 * whose details carry their protobuf bytes in base64. The blob data plane
 * answers its errors this way so the gateway gets back the ConnectError the
 * storage service raised. Written here because Connect exports its own codec
 * only as internal API (`@private`, outside semver); this is all of it the
 * blob plane needs.
 */

/** The protocol's status of each code; a code not listed is 500, as UNKNOWN. */
const statusOfCode = new Map<Code, number>([
  [Code.Canceled, 499],
  [Code.Unknown, 500],
  [Code.InvalidArgument, 400],
  [Code.DeadlineExceeded, 504],
  [Code.NotFound, 404],
  [Code.AlreadyExists, 409],
  [Code.PermissionDenied, 403],
  [Code.ResourceExhausted, 429],
  [Code.FailedPrecondition, 400],
  [Code.Aborted, 409],
  [Code.OutOfRange, 400],
  [Code.Unimplemented, 501],
  [Code.Internal, 500],
  [Code.Unavailable, 503],
  [Code.DataLoss, 500],
  [Code.Unauthenticated, 401],
]);

/** The protocol's code of an answer that carries no Connect error (an answer to HEAD, a proxy's); other statuses are UNKNOWN. */
const codeOfStatus = new Map<number, Code>([
  [400, Code.Internal],
  [401, Code.Unauthenticated],
  [403, Code.PermissionDenied],
  [404, Code.Unimplemented],
  [429, Code.Unavailable],
  [502, Code.Unavailable],
  [503, Code.Unavailable],
  [504, Code.Unavailable],
]);

/** The wire name of a code: its name in snake case ("permission_denied"). */
const codeName = (code: Code) => Code[code].replace(/[a-z](?=[A-Z])/g, "$&_").toLowerCase();
const codeByName = new Map(
  Object.values(Code)
    .filter((code): code is Code => typeof code === "number")
    .map((code) => [codeName(code), code]),
);

export const httpStatusOf = (code: Code): number => statusOfCode.get(code) ?? 500;

export const codeOfHttpStatus = (status: number): Code => codeOfStatus.get(status) ?? Code.Unknown;

const base64 = (bytes: Uint8Array) =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64").replace(/=+$/, "");

/** The error's JSON body (a detail built from a message also says what it holds, as `debug`). */
export function errorJsonBytes(error: ConnectError): Uint8Array {
  const json: { code: string; message?: string; details?: Array<{ type: string; value: string; debug?: JsonValue }> } =
    { code: codeName(error.code) };
  if (error.rawMessage.length > 0) json.message = error.rawMessage;
  if (error.details.length > 0) {
    json.details = error.details.map((detail) => {
      if (!("desc" in detail))
        return {
          type: detail.type,
          value: base64(detail.value),
          ...(detail.debug === undefined ? {} : { debug: detail.debug }),
        };
      const message = create(detail.desc, detail.value);
      let debug: JsonValue | undefined;
      try {
        debug = toJson(detail.desc, message);
      } catch {
        // Only a reader's aid: a message that has no JSON form (an Any of an unknown type) goes without.
      }
      return {
        type: detail.desc.typeName,
        value: base64(toBinary(detail.desc, message)),
        ...(debug === undefined ? {} : { debug }),
      };
    });
  }
  return new TextEncoder().encode(JSON.stringify(json));
}

/** The ConnectError a JSON body carries, with `metadata`; undefined when the body is not a Connect error. */
export function errorFromJsonBytes(bytes: Uint8Array, metadata: Headers, fallbackCode: Code): ConnectError | undefined {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined;
  const { code, message, details } = json as Record<string, unknown>;
  if (message !== undefined && message !== null && typeof message !== "string") return undefined;
  const error = new ConnectError(
    message ?? "",
    (typeof code === "string" ? codeByName.get(code) : undefined) ?? fallbackCode,
    metadata,
  );
  error.isWireError = true;
  if (!Array.isArray(details)) return error;
  for (const detail of details as unknown[]) {
    if (typeof detail !== "object" || detail === null || Array.isArray(detail)) return undefined;
    const { type, value, debug } = detail as Record<string, unknown>;
    if (typeof type !== "string" || typeof value !== "string") return undefined;
    error.details.push({ type, value: new Uint8Array(Buffer.from(value, "base64")), debug: debug as JsonValue });
  }
  return error;
}
