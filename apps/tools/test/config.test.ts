import { randomBytes } from "node:crypto";
import { loadConfig } from "@loom/runtime/config";
import { describe, expect, it } from "vitest";
import { toolsConfigSchema } from "../src/config.ts";

const base = { SERVICE_TOKEN: "t".repeat(24) };

describe("the tools service's configuration", () => {
  it("requires SECRETS_KEY, saying how to make one", () => {
    expect(() => loadConfig(toolsConfigSchema, base)).toThrow(
      /SECRETS_KEY: is required: 32 random bytes in base64 \(make one with `openssl rand -base64 32`\)/,
    );
  });

  it.each(["short", randomBytes(31).toString("base64"), randomBytes(33).toString("base64"), `${"A".repeat(43)}==`])(
    "refuses a SECRETS_KEY that is not 32 bytes in base64 (%s)",
    (key) => {
      expect(() => loadConfig(toolsConfigSchema, { ...base, SECRETS_KEY: key })).toThrow(
        /SECRETS_KEY: must be 32 random bytes in base64/,
      );
    },
  );

  it("takes 32 bytes in base64 or base64url, and previous keys comma-separated", () => {
    const [a, b, c] = [randomBytes(32), randomBytes(32), randomBytes(32)];
    const config = loadConfig(toolsConfigSchema, {
      ...base,
      SECRETS_KEY: a.toString("base64"),
      SECRETS_PREVIOUS_KEYS: `${b.toString("base64url")}, ${c.toString("base64")}`,
    });
    expect(config.SECRETS_KEY.equals(a)).toBe(true);
    expect(config.SECRETS_PREVIOUS_KEYS?.map((k) => k.toString("hex"))).toEqual([b.toString("hex"), c.toString("hex")]);
  });

  it("refuses a previous key that is malformed", () => {
    expect(() =>
      loadConfig(toolsConfigSchema, {
        ...base,
        SECRETS_KEY: randomBytes(32).toString("base64"),
        SECRETS_PREVIOUS_KEYS: "x,y",
      }),
    ).toThrow(/SECRETS_PREVIOUS_KEYS.*each key must be 32 random bytes in base64/);
  });
});
