/** Why a request on a user's behalf was not sent. */
export type RefusalReason =
  | "invalid-url"
  | "scheme"
  | "unresolved"
  | "metadata"
  | "link-local"
  | "private"
  | "loopback"
  | "unspecified"
  | "reserved";

/**
 * A request the outbound policy does not allow. The message is one sentence naming only what the user gave (the URL's
 * host), never an address a name resolved to: that would let a user map the internal network through error messages.
 * It is meant to become a 4xx.
 */
export class OutboundRefused extends Error {
  override name = "OutboundRefused";
  readonly reason: RefusalReason;
  constructor(reason: RefusalReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** A call that was allowed but went past a limit: its answer's size, its total time or the number of redirects. */
export class OutboundLimitExceeded extends Error {
  override name = "OutboundLimitExceeded";
  readonly limit: "size" | "time" | "redirects";
  constructor(limit: "size" | "time" | "redirects", message: string) {
    super(message);
    this.limit = limit;
  }
}
