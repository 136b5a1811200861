import { loadConfig } from "@loom/runtime/config";
import { describe, expect, it } from "vitest";
import { loomConfigSchema } from "../src/config.ts";

describe("the all-in-one process's configuration", () => {
  it("refuses OIDC_JWKS_URL without OIDC_ISSUER and OIDC_AUDIENCE, naming both", () => {
    const start = (extra: Record<string, string>) => () =>
      loadConfig(loomConfigSchema, { OIDC_JWKS_URL: "https://idp.example/jwks.json", ...extra });
    expect(start({})).toThrow(
      /OIDC_ISSUER: is required when OIDC_JWKS_URL is set[\s\S]*OIDC_AUDIENCE: is required when OIDC_JWKS_URL is set/,
    );
    expect(start({ OIDC_ISSUER: "https://idp.example", OIDC_AUDIENCE: "loom" })).not.toThrow();
  });

  it("refuses STRIPE_SECRET_KEY without BILLING_RETURN_URL, and BILLING_REQUIRED without a key", () => {
    const start = (env: Record<string, string>) => () => loadConfig(loomConfigSchema, env);
    expect(start({ STRIPE_SECRET_KEY: "sk_test_x" })).toThrow(
      /BILLING_RETURN_URL: is required when STRIPE_SECRET_KEY is set/,
    );
    expect(start({ BILLING_REQUIRED: "true" })).toThrow(/BILLING_REQUIRED: needs STRIPE_SECRET_KEY/);
    expect(
      start({
        STRIPE_SECRET_KEY: "sk_test_x",
        BILLING_RETURN_URL: "https://app.example/billing",
        BILLING_REQUIRED: "true",
      }),
    ).not.toThrow();
    expect(start({})).not.toThrow();
  });
});
