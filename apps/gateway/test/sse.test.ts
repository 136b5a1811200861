import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { jsonToValue } from "@loom/contracts/json-value";
import { EventSchema } from "@loom/proto/events/v1/events_pb";
import { describe, expect, it } from "vitest";
import { eventJson, eventJsonText } from "../src/routes/events.ts";
import { eventFrame, keepAliveFrame } from "../src/sse.ts";

describe("SSE framing", () => {
  it("frames events with id = offset and JSON data, keep-alives as comments, no event field", () => {
    expect(keepAliveFrame).toBe(": keep-alive\n\n");
    expect(eventFrame(0n, JSON.stringify({ type: "A" }))).toBe('id: 0\ndata: {"type":"A"}\n\n');
    expect(eventFrame(7n, eventJsonText(event({ payloadJson: '{"a":"line\\nbreak"}' }), "assistant_run_id"))).toMatch(
      /^id: 7\ndata: \{[^\n]*"payload":\{"a":"line\\nbreak"\}[^\n]*\}\n\n$/,
    );
  });
});

const payload = { text: "héllo ☃", n: [1, 2.5, -0.125, 1e21], nested: { ok: true, none: null }, quote: 'say "hi"' };

function event(fields: { payloadJson?: string; payload?: unknown }) {
  return create(EventSchema, {
    eventId: "0b6a9ad6-9c6e-4ad8-9b52-6f1f3c6f0a11",
    runId: "5d0f6a39-1f52-4c1e-8f8e-2a4f7f7b0c22",
    offset: 7n,
    type: "TextChunkEvent",
    origin: "ASSISTANT",
    ...(fields.payloadJson !== undefined ? { payloadJson: fields.payloadJson } : {}),
    ...(fields.payload !== undefined ? { payload: jsonToValue(fields.payload) } : {}),
    timestamp: 1764288000.25,
    createdAt: timestampFromDate(new Date("2026-11-28T01:00:00.123Z")),
  });
}

describe("an event's JSON text", () => {
  it("splices a payload sent as JSON text into the line JSON.stringify gives for the same event", () => {
    const fromText = eventJsonText(event({ payloadJson: JSON.stringify(payload) }), "assistant_run_id");
    const fromValue = eventJsonText(event({ payload }), "assistant_run_id");
    expect(fromText).toBe(fromValue);
    expect(fromText).toBe(JSON.stringify(eventJson(event({ payload }), "assistant_run_id")));
    expect(JSON.parse(fromText)).toEqual({
      event_id: "0b6a9ad6-9c6e-4ad8-9b52-6f1f3c6f0a11",
      assistant_run_id: "5d0f6a39-1f52-4c1e-8f8e-2a4f7f7b0c22",
      type: "TextChunkEvent",
      origin: "ASSISTANT",
      payload,
      timestamp: 1764288000.25,
      created_at: "2026-11-28T01:00:00.123Z",
    });
  });

  it("writes anew a payload text with a line break, which an SSE data line cannot hold", () => {
    const text = eventJsonText(event({ payloadJson: '{\n  "a": [1,\r\n 2]\n}' }), "structure_run_id");
    expect(text).not.toMatch(/[\r\n]/);
    expect(JSON.parse(text)).toMatchObject({
      structure_run_id: "5d0f6a39-1f52-4c1e-8f8e-2a4f7f7b0c22",
      payload: { a: [1, 2] },
    });
  });

  it("gives a JSON-text payload's value in the public JSON of reads", () => {
    expect(eventJson(event({ payloadJson: '[1,{"b":null}]' }), "assistant_run_id").payload).toEqual([1, { b: null }]);
  });
});
