import { type AllInOne, startAllInOne } from "@loom/test-stacks/all-in-one";
import { apiClient } from "@loom/testing/http";
import { smallDisk } from "@loom/testing/small-disk";
import { afterAll, describe, expect, it } from "vitest";

/**
 * Issue 31 (3): the all-in-one's data directory on a disk that fills up, for
 * real (a 32 MiB tmpfs; root needed). A write the WAL has no room for fails
 * with SQLITE_FULL, and then the process fails closed: nothing more is
 * acknowledged, even once there is room again, until a restart recovers
 * the database from its log (docs/decisions.md, "The embedded store").
 */
const disk = smallDisk(32 * 1024 * 1024);
if (typeof disk === "string") console.warn(`skipped: ${disk}`);

describe.skipIf(typeof disk === "string")("the all-in-one on a disk that fills up", () => {
  const dataDisk = disk as Exclude<typeof disk, string>;
  let loom: AllInOne | undefined;
  afterAll(async () => {
    await loom?.stop("SIGKILL");
    dataDisk.unmount();
  });

  it("answers 503 from the first failed write on, acknowledges nothing more, says so once, and a restart recovers what was acknowledged", {
    timeout: 90_000,
  }, async () => {
    loom = await startAllInOne({ LOOM_DATA_DIR: dataDisk.dir, PORT: "0" });
    const key = await loom.bootstrapKey();
    let api = apiClient(loom.url, key);
    const kept = (await api.post("/assistants", { name: "kept" })).body.assistant_id as string;
    expect(kept).toBeTruthy();

    dataDisk.fill();
    // Events of ~0.5 MiB each: once the WAL outgrows the space it had, a commit fails with SQLITE_FULL.
    const payload = { text: "x".repeat(512 * 1024) };
    let failed: { status: number; body: unknown } | undefined;
    for (let i = 0; i < 64 && !failed; i++) {
      const res = await api.post(`/structure-runs/${crypto.randomUUID()}/events`, [
        { type: "Large", timestamp: 1_790_000_000, payload },
      ]);
      if (res.status !== 202) failed = res;
    }
    expect(failed?.status).toBe(503);
    expect(JSON.stringify(failed?.body)).not.toMatch(/SQLITE|disk is full|loom\.db/i);

    // Room again: still nothing is acknowledged, and the process says it cannot serve.
    dataDisk.free();
    const after = await api.post("/assistants", { name: "after the failure" });
    expect(after.status).toBe(503);
    expect(after.headers.get("retry-after")).toBeTruthy();
    expect((await fetch(`${loom.url}/readyz`)).status).toBe(503);
    const said = loom
      .output()
      .split("\n")
      .filter((line) => line.includes("loom.db failed"));
    expect(said).toHaveLength(1);
    expect(JSON.parse(said[0]!).level).toBe(60); // fatal

    expect(await loom.stop("SIGTERM")).toBe(0);
    loom = await startAllInOne({ LOOM_DATA_DIR: dataDisk.dir, PORT: "0" });
    api = apiClient(loom.url, key);
    expect((await fetch(`${loom.url}/readyz`)).status).toBe(200);
    const names = ((await api.get("/assistants")).body.assistants as Array<{ name: string }>).map((a) => a.name);
    expect(names).toEqual(["kept"]);
    expect((await api.post("/assistants", { name: "after the restart" })).status).toBe(201);
  });
});
