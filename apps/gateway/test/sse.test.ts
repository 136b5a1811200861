import { describe, expect, it } from "vitest";
import { eventFrame, keepAliveFrame } from "../src/sse.ts";

describe("SSE framing", () => {
  it("frames events with id = offset and JSON data, keep-alives as comments, no event field", () => {
    expect(keepAliveFrame).toBe(": keep-alive\n\n");
    expect(eventFrame(0n, { type: "A" })).toBe('id: 0\ndata: {"type":"A"}\n\n');
    expect(eventFrame(7n, { a: "line\nbreak" })).toBe('id: 7\ndata: {"a":"line\\nbreak"}\n\n');
  });
});
