import { Writable } from "node:stream";
import { duplicateKeys } from "@loom/testing/json-keys";
import { describe, expect, it } from "vitest";
import { createLogger, logFormatOf } from "../src/logger.ts";

function written(): { lines: () => string; destination: Writable } {
  let text = "";
  const destination = new Writable({ write: (chunk: Buffer, _encoding, done) => ((text += chunk.toString()), done()) });
  return { lines: () => text, destination };
}

describe("log format", () => {
  it("is pretty on a terminal and JSON lines otherwise; LOG_FORMAT decides when set", () => {
    expect(logFormatOf({}, true)).toBe("pretty");
    expect(logFormatOf({}, false)).toBe("json");
    expect(logFormatOf({ LOG_FORMAT: "json" }, true)).toBe("json");
    expect(logFormatOf({ LOG_FORMAT: "pretty" }, false)).toBe("pretty");
  });

  it("writes JSON lines, credentials redacted", () => {
    const out = written();
    createLogger("loom", "info", { format: "json", destination: out.destination }).info(
      { authorization: "Bearer loom_s3cret", url: "http://127.0.0.1:8080" },
      "Loom is listening",
    );
    const line = JSON.parse(out.lines());
    expect(line).toMatchObject({
      level: 30,
      service: "loom",
      msg: "Loom is listening",
      authorization: "[redacted]",
      url: "http://127.0.0.1:8080",
    });
  });

  it("writes pretty lines a person reads, credentials still redacted", () => {
    const out = written();
    const logger = createLogger("loom", "info", { format: "pretty", destination: out.destination });
    logger.warn(
      { value: "loom_s3cret", credential: { value: "loom_s3cret" } },
      "Loom is listening on http://127.0.0.1:8080",
    );
    const text = out.lines();
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: loom: Loom is listening on http:\/\/127\.0\.0\.1:8080\n/);
    expect(() => JSON.parse(text)).toThrow();
    expect(text).not.toContain("s3cret");
    expect(text).toContain("[redacted]");
  });
});

describe("child loggers", () => {
  it("bind each field once: a child's service replaces its parent's", () => {
    const out = written();
    const logger = createLogger("loom", "info", { format: "json", destination: out.destination });
    const runs = logger.child({ service: "runs" });
    runs.child({ run_id: "r1" }).child({ service: "worker", run_id: "r2" }).info({ attempt: 1 }, "claimed");
    runs.info("started");
    const [claimed, started] = out.lines().trim().split("\n");
    expect(duplicateKeys(claimed!)).toEqual([]);
    expect(JSON.parse(claimed!)).toMatchObject({ service: "worker", run_id: "r2", attempt: 1 });
    expect(duplicateKeys(started!)).toEqual([]);
    expect(JSON.parse(started!).service).toBe("runs");
  });

  it("(the check above finds a repeated key, nested ones too)", () => {
    expect(duplicateKeys('{"service":"loom","service":"runs","err":{"a":1,"a":[{"b":1,"b":2}]}}')).toEqual([
      "service",
      "err.a",
      "err.a.b",
    ]);
    expect(duplicateKeys('{"a":{"x":1},"b":{"x":"\\"x\\","}}')).toEqual([]);
  });
});
