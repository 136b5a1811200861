import { createHash } from "node:crypto";
import { z } from "zod";

/** A secrets key: 32 bytes (AES-256), and its id, which each sealed value keeps. */
export interface SecretKey {
  id: string;
  bytes: Buffer;
}

/** The key that seals, and every key that may open (the current one and SECRETS_PREVIOUS_KEYS), by id. */
export interface SecretKeyring {
  current: SecretKey;
  byId: ReadonlyMap<string, SecretKey>;
}

/**
 * A key's id: the first 8 bytes of its SHA-256, in hex. It names the key a
 * value was sealed with (so a rotation knows which rows to reseal, and an
 * unreadable row says which key it needs) without revealing the key.
 */
export const keyIdOf = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex").slice(0, 16);

export const secretKeyOf = (bytes: Buffer): SecretKey => ({ id: keyIdOf(bytes), bytes });

/** 32 bytes in base64 (or base64url): 43 characters and an optional `=`. */
const base64Key = /^[A-Za-z0-9+/_-]{43}=?$/;
const keyShape = "32 random bytes in base64 (make one with `openssl rand -base64 32`)";
const keyProblem = `must be ${keyShape}`;

/** A SECRETS_KEY setting: the key's bytes. */
export const secretKeySetting = () =>
  z
    .string({ error: `is required: ${keyShape}` })
    .regex(base64Key, keyProblem)
    .transform((text) => Buffer.from(text, "base64"));

/** A SECRETS_PREVIOUS_KEYS setting: comma-separated keys, each as SECRETS_KEY. */
export const previousKeysSetting = () =>
  z
    .string()
    .transform((text) => text.split(",").map((key) => key.trim()))
    .pipe(
      z.array(
        z
          .string()
          .regex(base64Key, `each key ${keyProblem}`)
          .transform((t) => Buffer.from(t, "base64")),
      ),
    );

/** The keyring of a current key and the previous ones (those only open). */
export function secretKeyring(current: Buffer, previous: readonly Buffer[] = []): SecretKeyring {
  const currentKey = secretKeyOf(current);
  const byId = new Map(previous.map((bytes) => secretKeyOf(bytes)).map((key) => [key.id, key]));
  byId.set(currentKey.id, currentKey);
  return { current: currentKey, byId };
}
