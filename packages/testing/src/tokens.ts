import { SignJWT } from "jose";

/** The HMAC secret the test stacks accept access tokens with. */
export const testTokenSecret = "test-access-token-secret-with-32-plus-characters";

/** Signs an access token as a self-hosted deployment's identity provider would; `expiresIn: null`: with no `exp` at all. */
export async function signAccessToken(
  claims: { sub: string; email?: string; name?: string; org_id?: string },
  options: { expiresIn?: string | number | null; secret?: string } = {},
): Promise<string> {
  const token = new SignJWT({ ...claims }).setProtectedHeader({ alg: "HS256" }).setIssuedAt();
  if (options.expiresIn !== null) token.setExpirationTime(options.expiresIn ?? "10m");
  return token.sign(new TextEncoder().encode(options.secret ?? testTokenSecret));
}
