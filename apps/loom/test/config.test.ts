import { describe, expect, it } from "vitest";
import { loadConfig } from "@loom/kit/config";
import { loomConfigSchema } from "../src/config.ts";

describe("the all-in-one process's configuration", () => {
  it("refuses OIDC_JWKS_URL without OIDC_ISSUER and OIDC_AUDIENCE, naming both", () => {
    const start = (extra: Record<string, string>) => () => loadConfig(loomConfigSchema, { OIDC_JWKS_URL: "https://idp.example/jwks.json", ...extra });
    expect(start({})).toThrow(/OIDC_ISSUER: is required when OIDC_JWKS_URL is set[\s\S]*OIDC_AUDIENCE: is required when OIDC_JWKS_URL is set/);
    expect(start({ OIDC_ISSUER: "https://idp.example", OIDC_AUDIENCE: "loom" })).not.toThrow();
  });
});
