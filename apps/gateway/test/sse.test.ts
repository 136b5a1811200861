import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { FollowEventsResponseSchema, type FollowEventsResponse } from "@loom/proto/events/v1/events_pb";
import { eventFrame, keepAliveFrame, sseStream } from "../src/sse.ts";

async function* messages(...items: FollowEventsResponse[]) {
  for (const item of items) yield item;
}
const keepAlive = () => create(FollowEventsResponseSchema, { kind: { case: "keepAlive", value: {} } });
const event = (offset: bigint, type: string) =>
  create(FollowEventsResponseSchema, { kind: { case: "event", value: { offset, type, eventId: `e${offset}` } } });

describe("SSE framing", () => {
  it("frames events with id = offset and JSON data, keep-alives as comments, no event field", async () => {
    const frames: string[] = [];
    const stream = await sseStream(messages(keepAlive(), event(0n, "A"), keepAlive(), event(1n, "B")), (e) => ({ type: e.type }));
    for await (const frame of stream) frames.push(frame);
    expect(frames).toEqual([keepAliveFrame, 'id: 0\ndata: {"type":"A"}\n\n', keepAliveFrame, 'id: 1\ndata: {"type":"B"}\n\n']);
    expect(eventFrame(7n, { a: "line\nbreak" })).toBe('id: 7\ndata: {"a":"line\\nbreak"}\n\n');
  });

  it("surfaces a failure of the first message before anything is framed", async () => {
    async function* failing(): AsyncGenerator<FollowEventsResponse> {
      throw new Error("not found");
    }
    await expect(sseStream(failing(), () => ({}))).rejects.toThrow("not found");
  });
});
