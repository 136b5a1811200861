import { createServer } from "node:http";
import { loadConfig } from "@loom/runtime/config";
import { listen, type RunningServer } from "@loom/server/rpc-server";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccessTokenVerifier } from "../src/access-tokens.ts";
import { identityConfigSchema } from "../src/config.ts";

type SigningKey = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];

/** JWKS verification against a real JWKS endpoint on port 0, as an OpenID provider serves it. */
describe("access tokens verified against a JWKS URL", () => {
  let jwks: RunningServer;
  let privateKey: SigningKey;
  let otherKey: SigningKey;

  beforeAll(async () => {
    const pair = await generateKeyPair("RS256");
    privateKey = pair.privateKey;
    otherKey = (await generateKeyPair("RS256")).privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    jwks = await listen(
      createServer((_req, res) =>
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] })),
      ),
      0,
      "127.0.0.1",
    );
  });
  afterAll(() => jwks?.close());

  const sign = (key: SigningKey, claims: Record<string, unknown>, audience = "loom", issuer = "https://idp.example") =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: "k1" })
      .setIssuer(issuer)
      .setAudience(audience)
      .setExpirationTime("5m")
      .sign(key);

  const verifier = () =>
    createAccessTokenVerifier({
      jwksUrl: `${jwks.url}/.well-known/jwks.json`,
      issuer: "https://idp.example",
      audience: "loom",
    })!;

  it("accepts a token signed by the provider's key and reads its claims", async () => {
    const claims = await verifier().verify(
      await sign(privateKey, { sub: "u1", email: "u1@example.com", name: "U One", org_id: "o1" }),
    );
    expect(claims).toEqual({
      subject: "u1",
      email: "u1@example.com",
      name: "U One",
      organizationId: "o1",
      expiresAt: expect.any(Date),
    });
  });

  it.each([
    ["another key", () => sign(otherKey, { sub: "u1" })],
    ["another audience", () => sign(privateKey, { sub: "u1" }, "someone-else")],
    ["another issuer", () => sign(privateKey, { sub: "u1" }, "loom", "https://evil.example")],
    ["no subject", () => sign(privateKey, {})],
    [
      "no expiry",
      () =>
        new SignJWT({ sub: "u1" })
          .setProtectedHeader({ alg: "RS256", kid: "k1" })
          .setIssuer("https://idp.example")
          .setAudience("loom")
          .sign(privateKey),
    ],
    [
      "an expiry more than a day ahead",
      () =>
        new SignJWT({ sub: "u1" })
          .setProtectedHeader({ alg: "RS256", kid: "k1" })
          .setIssuer("https://idp.example")
          .setAudience("loom")
          .setExpirationTime("25h")
          .sign(privateKey),
    ],
  ])("rejects a token with %s as UNAUTHENTICATED", async (_what, token) => {
    await expect(verifier().verify(await token())).rejects.toMatchObject({ code: 16 });
  });

  it("is off when neither a secret nor a JWKS URL is configured", () => {
    expect(createAccessTokenVerifier({})).toBeUndefined();
  });

  it("answers UNAVAILABLE, not UNAUTHENTICATED, when the provider's keys cannot be fetched", async () => {
    const token = await sign(privateKey, { sub: "u1" });
    const down = await listen(createServer(), 0, "127.0.0.1");
    await down.close(); // a port where nothing listens
    const failing = await listen(
      createServer((req, res) =>
        req.url === "/500"
          ? res.writeHead(500).end()
          : res.writeHead(200, { "content-type": "application/json" }).end("not json"),
      ),
      0,
      "127.0.0.1",
    );
    try {
      for (const url of [`${down.url}/jwks.json`, `${failing.url}/500`, `${failing.url}/garbage`]) {
        const verify = createAccessTokenVerifier({
          jwksUrl: url,
          issuer: "https://idp.example",
          audience: "loom",
        })!.verify(token);
        await expect(verify, url).rejects.toMatchObject({ code: 14 }); // Code.Unavailable → 503 with Retry-After in the gateway
      }
    } finally {
      await failing.close();
    }
  });

  it("keeps a token whose key is not in a fetched key set UNAUTHENTICATED", async () => {
    const token = await new SignJWT({ sub: "u1" })
      .setProtectedHeader({ alg: "RS256", kid: "unknown" })
      .setIssuer("https://idp.example")
      .setAudience("loom")
      .setExpirationTime("5m")
      .sign(privateKey);
    await expect(verifier().verify(token)).rejects.toMatchObject({ code: 16 });
  });
});

describe("access-token configuration", () => {
  it("refuses to start the identity service with OIDC_JWKS_URL but no OIDC_ISSUER / OIDC_AUDIENCE, naming them", () => {
    const start = (extra: Record<string, string>) => () =>
      loadConfig(identityConfigSchema, {
        SERVICE_TOKEN: "a-service-token-of-16+",
        OIDC_JWKS_URL: "https://idp.example/jwks.json",
        ...extra,
      });
    expect(start({})).toThrow(
      /OIDC_ISSUER: is required when OIDC_JWKS_URL is set[\s\S]*OIDC_AUDIENCE: is required when OIDC_JWKS_URL is set/,
    );
    expect(start({ OIDC_ISSUER: "https://idp.example" })).toThrow(/OIDC_AUDIENCE: is required/);
    expect(start({ OIDC_ISSUER: "https://idp.example", OIDC_AUDIENCE: "loom" })).not.toThrow();
  });
});
