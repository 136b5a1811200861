import { serviceNames } from "@loom/services/registry";
import { type AllInOne, startAllInOne } from "@loom/test-stacks/all-in-one";
import { freshDataDir } from "@loom/testing/data-dir";
import { duplicateKeys } from "@loom/testing/json-keys";
import { afterAll, describe, expect, it } from "vitest";

interface LogLine {
  service: string;
  msg: string;
  scope?: string;
  version?: number;
  file?: string;
}

/** Every line a process printed, each a JSON document a collector would take: nothing else, no key twice. */
function logLines(output: string): LogLine[] {
  const lines = output.split("\n").filter((line) => line !== "");
  for (const line of lines) expect(duplicateKeys(line), line).toEqual([]);
  return lines.map((line) => JSON.parse(line) as LogLine);
}

/** The all-in-one's JSON logs (LOG_FORMAT=json), as a log collector reads them. */
describe("the all-in-one's logs", () => {
  const dataDir = freshDataDir();
  let loom: AllInOne | undefined;
  afterAll(async () => void (await loom?.stop("SIGKILL")));

  it("carry each field once, the service that wrote the line as `service`", { timeout: 40_000 }, async () => {
    loom = await startAllInOne({ PORT: "0", LOOM_DATA_DIR: dataDir });
    await loom.bootstrapKey();
    expect(await loom.stop("SIGTERM")).toBe(0);
    const lines = logLines(loom.output());
    expect(lines.find((line) => line.msg.startsWith("bootstrapped the first user"))?.service).toBe("identity");
    expect(lines.find((line) => line.msg === "run worker started")?.service).toBe("runs");
    expect(lines.find((line) => line.msg.startsWith("Loom is listening"))?.service).toBe("loom");
  });

  it("say each migration that ran at start, one line each, and none when there were none to run", {
    timeout: 40_000,
  }, async () => {
    const first = logLines(loom!.output()).filter((line) => line.msg.startsWith("migrated"));
    const migrated = first.map((line) => `${line.scope} ${line.version}`);
    expect(new Set(migrated).size).toBe(migrated.length);
    // Every service's tables (each names its migrations by its registry name).
    for (const scope of serviceNames) expect(migrated).toContain(`${scope} 1`);
    expect(first.every((line) => line.file === `${dataDir}/loom.db`)).toBe(true);
    expect(first[0]!.msg).toMatch(/^migrated the \w+ tables to schema version 1 of \d+$/);

    loom = await startAllInOne({ PORT: "0", LOOM_DATA_DIR: dataDir });
    expect(await loom.stop("SIGTERM")).toBe(0);
    expect(logLines(loom.output()).filter((line) => line.msg.startsWith("migrated"))).toEqual([]);
  });
});
