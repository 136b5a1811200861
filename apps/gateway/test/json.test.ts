import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { isoTime } from "../src/json.ts";

describe("isoTime", () => {
  it("writes RFC 3339 in UTC with milliseconds", () => {
    expect(isoTime(timestampFromDate(new Date("2026-11-22T10:00:00.5+02:00")))).toBe("2026-11-22T08:00:00.500Z");
  });

  it("refuses a missing time instead of answering 1970", () => {
    expect(() => isoTime(undefined)).toThrow(/without a required timestamp/);
  });
});
