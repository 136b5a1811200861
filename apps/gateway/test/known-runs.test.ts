import { describe, expect, it } from "vitest";
import { createKnownRuns } from "../src/known-runs.ts";

describe("the runs a gateway knows exist", () => {
  it("are known per organization: another organization's run of the same id is not", () => {
    const known = createKnownRuns();
    known.add("org-a", "run-1");
    expect(known.has("org-a", "run-1")).toBe(true);
    expect(known.has("org-b", "run-1")).toBe(false);
    expect(known.has("org-a", "run-2")).toBe(false);
  });

  it("are bounded: past the bound the oldest is forgotten (and only checked again)", () => {
    const known = createKnownRuns(3);
    for (const run of ["r1", "r2", "r3", "r4"]) known.add("org", run);
    expect(["r1", "r2", "r3", "r4"].map((run) => known.has("org", run))).toEqual([false, true, true, true]);
  });
});
