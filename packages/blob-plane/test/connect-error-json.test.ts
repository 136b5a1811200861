import { Code, ConnectError } from "@connectrpc/connect";
import { fieldViolationsOf, invalidArgument } from "@loom/contracts/errors";
import { describe, expect, it } from "vitest";
import { codeOfHttpStatus, errorFromJsonBytes, errorJsonBytes, httpStatusOf } from "../src/connect-error-json.ts";

const codes = Object.values(Code).filter((code): code is Code => typeof code === "number");
const json = (text: string) => new TextEncoder().encode(text);

describe("Connect's unary error JSON, as the blob plane writes and reads it", () => {
  it("gives back every code and message it wrote, with the metadata given", () => {
    for (const code of codes) {
      const read = errorFromJsonBytes(
        errorJsonBytes(new ConnectError(`failed with ${code}`, code)),
        new Headers({ "retry-after": "3" }),
        Code.Unknown,
      )!;
      expect([read.code, read.rawMessage, read.metadata.get("retry-after")]).toEqual([
        code,
        `failed with ${code}`,
        "3",
      ]);
    }
  });

  it("writes the protocol's names and keeps details as protobuf bytes", () => {
    const written = JSON.parse(
      new TextDecoder().decode(errorJsonBytes(invalidArgument([{ path: "path.name", message: "is empty" }]))),
    );
    expect(written).toMatchObject({
      code: "invalid_argument",
      message: "path.name: is empty",
      details: [{ type: "loom.common.v1.FieldViolations", value: expect.stringMatching(/^[A-Za-z0-9+/]+$/) }],
    });
    const read = errorFromJsonBytes(json(JSON.stringify(written)), new Headers(), Code.Unknown)!;
    expect(fieldViolationsOf(read).map(({ path, message }) => ({ path, message }))).toEqual([
      { path: "path.name", message: "is empty" },
    ]);
  });

  it("reads nothing from a body that is not a Connect error; the status then says the code", () => {
    for (const body of [
      "",
      "<html>bad gateway</html>",
      "[]",
      '{"message": 7}',
      '{"code": "not_found", "details": [{"type": 1}]}',
    ]) {
      expect(errorFromJsonBytes(json(body), new Headers(), Code.Unknown)).toBeUndefined();
    }
    expect([codeOfHttpStatus(403), codeOfHttpStatus(502), codeOfHttpStatus(418)]).toEqual([
      Code.PermissionDenied,
      Code.Unavailable,
      Code.Unknown,
    ]);
    expect([httpStatusOf(Code.NotFound), httpStatusOf(Code.ResourceExhausted), httpStatusOf(Code.Canceled)]).toEqual([
      404, 429, 499,
    ]);
  });
});
