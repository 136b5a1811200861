import { createSecretKey } from "node:crypto";
import { permissionDenied } from "@loom/contracts/errors";
import { jwtVerify, SignJWT } from "jose";

export type BlobOperation = "PUT" | "GET";

/** What a signed blob URL lets its holder do, and until when. */
export interface BlobGrant {
  organizationId: string;
  bucketId: string;
  /**
   * The asset's id, not its name: a URL for asset A never reaches asset B,
   * nor a later asset of A's name (delete and re-create revokes the URL).
   */
  asset: { id: string } | LegacyAssetClaim;
  operations: BlobOperation[];
  expiresAt: Date;
}

/** A token made before tokens named the asset's id: it names the asset by name (assets.ts `granted` decides). */
export interface LegacyAssetClaim {
  legacyName: string;
}

/** The one answer to any URL that does not grant the request. */
export const urlNotValid = () =>
  permissionDenied("this URL is not valid for this request: it is malformed, expired or for another operation");

/** The token's type (JWT `typ`): a Loom access token or any other JWT signed with the same key is not a blob token. */
const tokenType = "loom-blob+jwt";

/**
 * Blob URL tokens: compact JWS (HS256) by `jose`, a well-kept library, rather
 * than a signature format of our own — the claims are bound together and
 * checked (signature, type, expiry) in one place. The token is the URL's
 * only credential, so every failure is the same PERMISSION_DENIED: it never
 * tells a forged token from an expired one, or whether the asset exists.
 */
export function createBlobTokens(secret: Uint8Array) {
  // A KeyObject made once: from raw bytes, jose would import the key again on every call.
  const signingKey = createSecretKey(secret);
  return {
    async sign(grant: Omit<BlobGrant, "asset"> & { assetId: string }): Promise<string> {
      return new SignJWT({
        org: grant.organizationId,
        bkt: grant.bucketId,
        aid: grant.assetId,
        ops: grant.operations.join(","),
      })
        .setProtectedHeader({ alg: "HS256", typ: tokenType })
        .setExpirationTime(Math.floor(grant.expiresAt.getTime() / 1000))
        .sign(signingKey);
    },

    /** The grant of a token good for `operation` now; PERMISSION_DENIED otherwise. */
    async verify(token: string, operation: BlobOperation): Promise<BlobGrant> {
      const denied = urlNotValid;
      try {
        const { payload } = await jwtVerify(token, signingKey, {
          algorithms: ["HS256"],
          typ: tokenType,
          clockTolerance: 0,
        });
        const { org, bkt, aid, ast, ops, exp } = payload;
        if (typeof org !== "string" || typeof bkt !== "string" || typeof ops !== "string" || typeof exp !== "number")
          throw denied();
        const asset = typeof aid === "string" ? { id: aid } : typeof ast === "string" ? { legacyName: ast } : undefined;
        if (!asset) throw denied();
        const operations = ops.split(",") as BlobOperation[];
        if (!operations.includes(operation)) throw denied();
        return { organizationId: org, bucketId: bkt, asset, operations, expiresAt: new Date(exp * 1000) };
      } catch {
        throw denied(); // a JOSE error (signature, type, expiry, format) or a claim of the wrong shape
      }
    },
  };
}

export type BlobTokens = ReturnType<typeof createBlobTokens>;
