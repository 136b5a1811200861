import { Code, ConnectError } from "@connectrpc/connect";
import { unauthenticated } from "@loom/contracts/errors";
import { createRemoteJWKSet, errors, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from "jose";

/** What Loom reads from a verified access token. */
export interface TokenClaims {
  subject: string;
  email?: string;
  name?: string;
  organizationId?: string;
  /** The token's `exp` (required); answers about it are never cached past it. */
  expiresAt: Date;
}

export interface AccessTokenVerifier {
  verify(token: string): Promise<TokenClaims>;
}

export interface AccessTokenOptions {
  /** HMAC secret for self-hosting (HS256/384/512). */
  secret?: string;
  /** JWKS of an OpenID provider; wins over `secret` when both are set. */
  jwksUrl?: string;
  issuer?: string;
  audience?: string;
  /** A token's `exp` may be at most this far ahead (docs/decisions.md, "Access token lifetime"); default a day. */
  maxLifetimeSeconds?: number;
}

/** The default of ACCESS_TOKEN_MAX_LIFETIME_SECONDS (config.ts). */
export const defaultMaxTokenLifetimeSeconds = 86_400;

/** Verifies JWT access tokens with `jose`; undefined when tokens are not configured. */
export function createAccessTokenVerifier(options: AccessTokenOptions): AccessTokenVerifier | undefined {
  let key: Uint8Array | JWTVerifyGetKey;
  let algorithms: string[];
  if (options.jwksUrl) {
    key = reachableOrUnavailable(createRemoteJWKSet(new URL(options.jwksUrl)));
    algorithms = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
  } else if (options.secret) {
    key = new TextEncoder().encode(options.secret);
    algorithms = ["HS256", "HS384", "HS512"];
  } else {
    return undefined;
  }
  const maxLifetimeSeconds = options.maxLifetimeSeconds ?? defaultMaxTokenLifetimeSeconds;
  const verifyOptions = {
    algorithms,
    // A token without an expiry would be a credential for ever, with nothing to revoke it by.
    requiredClaims: ["exp"],
    ...(options.issuer ? { issuer: options.issuer } : {}),
    ...(options.audience ? { audience: options.audience } : {}),
  };
  return {
    async verify(token) {
      let payload: JWTPayload;
      try {
        // Two overloads (key vs. key getter); the branch keeps each call typed.
        payload =
          key instanceof Uint8Array
            ? (await jwtVerify(token, key, verifyOptions)).payload
            : (await jwtVerify(token, key, verifyOptions)).payload;
      } catch (error) {
        if (error instanceof ConnectError) throw error;
        if (error instanceof errors.JWTExpired) throw unauthenticated("access token expired");
        if (error instanceof errors.JWTClaimValidationFailed && error.claim === "exp")
          throw unauthenticated("access token has no expiry (exp)");
        if (error instanceof errors.JOSEError) throw unauthenticated("invalid access token");
        throw error;
      }
      if (typeof payload.sub !== "string" || payload.sub === "") throw unauthenticated("access token has no subject");
      // jose checked that `exp` is a number in the future.
      if (payload.exp! - Date.now() / 1000 > maxLifetimeSeconds) {
        throw unauthenticated(
          `access token lives too long: its expiry (exp) may be at most ${maxLifetimeSeconds} s ahead`,
        );
      }
      const text = (claim: unknown) => (typeof claim === "string" && claim !== "" ? claim : undefined);
      return {
        subject: payload.sub,
        email: text(payload.email),
        name: text(payload.name),
        organizationId: text(payload.org_id),
        expiresAt: new Date(payload.exp! * 1000),
      };
    },
  };
}

/**
 * A provider whose keys cannot be fetched (down, timing out, answering
 * something that is not a key set) says nothing about the token: that is
 * UNAVAILABLE (503, retry), not UNAUTHENTICATED (401, which tells a client
 * its credential is bad). A token whose key is not in a fetched set stays 401.
 */
function reachableOrUnavailable(remote: JWTVerifyGetKey): JWTVerifyGetKey {
  return async (header, token) => {
    try {
      return await remote(header, token);
    } catch (error) {
      const unreachable =
        !(error instanceof errors.JOSEError) ||
        error instanceof errors.JWKSTimeout ||
        error instanceof errors.JWKSInvalid ||
        error.code === "ERR_JOSE_GENERIC";
      if (unreachable)
        throw new ConnectError("the access token issuer's keys cannot be fetched right now", Code.Unavailable);
      throw error;
    }
  };
}
