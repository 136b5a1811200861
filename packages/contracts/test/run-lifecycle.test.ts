import { RunStatus } from "@loom/proto/runs/v1/runs_pb";
import { describe, expect, it } from "vitest";
import {
  activeStatuses,
  lifecycleEventType,
  runStatuses,
  terminalLifecycleEvents,
  terminalStatuses,
} from "../src/run-lifecycle.ts";

describe("the run lifecycle, named once", () => {
  it("names exactly the contract's run statuses", () => {
    const contract = Object.keys(RunStatus).filter((key) => Number.isNaN(Number(key)) && key !== "UNSPECIFIED");
    expect([...runStatuses]).toEqual(contract);
  });

  it("splits them into active and terminal, and gives each its own lifecycle event", () => {
    expect([...activeStatuses, ...terminalStatuses].sort()).toEqual([...runStatuses].sort());
    expect(new Set(Object.values(lifecycleEventType)).size).toBe(runStatuses.length);
    expect([...terminalLifecycleEvents].sort()).toEqual([
      "AssistantRunCancelled",
      "AssistantRunErrored",
      "AssistantRunFailed",
      "AssistantRunSucceeded",
    ]);
  });
});
