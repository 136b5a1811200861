import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { SecretKeyring } from "./secret-keys.ts";

/** A secret's value as stored: AES-256-GCM ciphertext with its tag, its nonce, and the id of the key. */
export interface SealedValue {
  keyId: string;
  /** 12 random bytes, new for every sealing. */
  nonce: Uint8Array;
  /** The ciphertext followed by the 16-byte authentication tag. */
  ciphertext: Uint8Array;
}

/** Whose value it is: bound to the ciphertext as additional authenticated data. */
export interface SecretOwner {
  organizationId: string;
  secretId: string;
}

const algorithm = "aes-256-gcm";
const nonceBytes = 12;
const tagBytes = 16;

/**
 * The additional authenticated data: a value sealed for one secret of one
 * organization does not open as another's (a row copied elsewhere fails).
 * Versioned, so a later format cannot be mistaken for this one.
 */
const associatedData = ({ organizationId, secretId }: SecretOwner): Buffer =>
  Buffer.from(`loom.secret.v1\0${organizationId}\0${secretId}`, "utf8");

/** A value no key of the keyring opens: an unknown key id, or a row altered or moved. Never says the value. */
export class SecretUnreadable extends Error {
  override name = "SecretUnreadable";
  constructor(secretId: string, keyId: string, reason: "unknown key" | "does not authenticate") {
    super(
      reason === "unknown key"
        ? `the secret ${secretId} was sealed with the key ${keyId}, which this process does not hold (SECRETS_KEY, SECRETS_PREVIOUS_KEYS)`
        : `the secret ${secretId} does not decrypt with the key ${keyId}: the stored row was altered or belongs to another secret`,
    );
  }
}

/** Seals a value with the keyring's current key. */
export function sealValue(keyring: SecretKeyring, owner: SecretOwner, value: string): SealedValue {
  const nonce = randomBytes(nonceBytes);
  const cipher = createCipheriv(algorithm, keyring.current.bytes, nonce, { authTagLength: tagBytes });
  cipher.setAAD(associatedData(owner));
  const ciphertext = Buffer.concat([cipher.update(value, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return { keyId: keyring.current.id, nonce, ciphertext };
}

/** The value, opened with the key it names; SecretUnreadable when that key is not held or the row does not authenticate. */
export function openValue(keyring: SecretKeyring, owner: SecretOwner, sealed: SealedValue): string {
  const key = keyring.byId.get(sealed.keyId);
  if (!key) throw new SecretUnreadable(owner.secretId, sealed.keyId, "unknown key");
  const body = sealed.ciphertext.subarray(0, sealed.ciphertext.length - tagBytes);
  const tag = sealed.ciphertext.subarray(sealed.ciphertext.length - tagBytes);
  try {
    const decipher = createDecipheriv(algorithm, key.bytes, sealed.nonce, { authTagLength: tagBytes });
    decipher.setAAD(associatedData(owner));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
  } catch {
    throw new SecretUnreadable(owner.secretId, sealed.keyId, "does not authenticate");
  }
}
