import { SignJWT } from "jose";

/** The HMAC secret the test stacks accept access tokens with. */
export const testTokenSecret = "test-access-token-secret-with-32-plus-characters";

/** Signs an access token as a self-hosted deployment's identity provider would. */
export async function signAccessToken(
  claims: { sub: string; email?: string; name?: string; org_id?: string },
  options: { expiresIn?: string | number; secret?: string } = {},
): Promise<string> {
  return new SignJWT({ ...claims })
    .setProtectedHeader({ alg: "HS256" })
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? "10m")
    .sign(new TextEncoder().encode(options.secret ?? testTokenSecret));
}
