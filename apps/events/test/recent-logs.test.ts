import { create } from "@bufbuild/protobuf";
import { newId } from "@loom/contracts/ids";
import { EventSchema } from "@loom/proto/events/v1/events_pb";
import { describe, expect, it } from "vitest";
import { createRecentLogs } from "../src/recent-logs.ts";
import type { LogRef } from "../src/store/port.ts";

const org = newId();
const assistantLog = (): LogRef => ({ runKind: "assistant-run", runId: newId() });
const events = (from: number, to: number, payloadJson = "") =>
  Array.from({ length: to - from }, (_, i) =>
    create(EventSchema, { offset: BigInt(from + i), type: "E", payloadJson }),
  );
const offsets = (held: { offset: bigint }[] | undefined) => held?.map((e) => Number(e.offset));

describe("recent logs", () => {
  it("serves a closed log from any offset it holds without a gap up to the end, and nothing else", () => {
    const recent = createRecentLogs(1024 * 1024);
    const log = assistantLog();
    recent.add(log, org, events(0, 3), false);
    expect(recent.closedFrom(log, org, 0)).toBeUndefined(); // not closed yet
    recent.add(log, org, events(3, 5), true);
    expect(offsets(recent.closedFrom(log, org, 0))).toEqual([0, 1, 2, 3, 4]);
    expect(offsets(recent.closedFrom(log, org, 3))).toEqual([3, 4]);
    expect(offsets(recent.closedFrom(log, org, 5))).toEqual([]);
    expect(recent.closedFrom(log, newId(), 0)).toBeUndefined(); // another organization's
  });

  it("keeps only what follows a gap (another replica's appends came between)", () => {
    const recent = createRecentLogs(1024 * 1024);
    const log = assistantLog();
    recent.add(log, org, events(0, 3), false);
    recent.add(log, org, events(5, 8), true);
    expect(recent.closedFrom(log, org, 0)).toBeUndefined();
    expect(recent.closedFrom(log, org, 4)).toBeUndefined();
    expect(offsets(recent.closedFrom(log, org, 5))).toEqual([5, 6, 7]);
    expect(offsets(recent.closedFrom(log, org, 6))).toEqual([6, 7]);
  });

  it("never keeps a structure run's log, which may grow after its end event", () => {
    const recent = createRecentLogs(1024 * 1024);
    const log: LogRef = { runKind: "structure-run", runId: newId() };
    recent.add(log, org, events(0, 2), true);
    expect(recent.closedFrom(log, org, 0)).toBeUndefined();
  });

  it("lets the least recently used logs go beyond its bytes", () => {
    const recent = createRecentLogs(10_000);
    const logs = Array.from({ length: 10 }, assistantLog);
    for (const log of logs) recent.add(log, org, events(0, 4, "x".repeat(500)), true);
    const kept = logs.filter((log) => recent.closedFrom(log, org, 0));
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(10);
    expect(kept).toEqual(logs.slice(10 - kept.length)); // the newest
  });
});
