/**
 * Bus subjects shared between services: like the proto contracts, part of the
 * contract between them, so they are named in one place.
 */
export const subjects = {
  /** Payload: the deleted api_key_id, UTF-8. Published by identity; gateways drop cached answers. */
  revokedApiKeys: "loom.identity.api-keys.revoked",
  /**
   * Payload: one stored `loom.events.v1.Event`, protobuf binary. Published by
   * events after the append is stored, one message per event in offset order;
   * every events replica feeds its followers from it. `runId` is lower case.
   */
  events: (kind: "assistant-run" | "structure-run", runId: string) => `loom.events.${kind}.${runId}`,
} as const;
