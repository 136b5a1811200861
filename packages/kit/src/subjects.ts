/**
 * Bus subjects shared between services: like the proto contracts, part of the
 * contract between them, so they are named in one place.
 */
export const subjects = {
  /** Payload: the deleted api_key_id, UTF-8. Published by identity; gateways drop cached answers. */
  revokedApiKeys: "loom.identity.api-keys.revoked",
} as const;
