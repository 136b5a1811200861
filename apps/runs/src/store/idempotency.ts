/** How long an Idempotency-Key keeps answering with its run (semantics.md §5). */
export const idempotencyWindowMs = 24 * 60 * 60 * 1000;

export interface IdempotencyRecord {
  organizationId: string;
  key: string;
  fingerprint: string;
  /** Chosen before the run is stored: every request with the key answers this run. */
  runId: string;
  createdAt: Date;
  /** Which attempt at storing the run holds the key: 0 the first request, then each takeover of a stalled one. */
  attempt: number;
  /** When that attempt began; an attempt whose run is still missing long after is stale. */
  attemptAt: Date;
}

/** The Idempotency-Keys of run creates, each naming its run for `idempotencyWindowMs`. */
export interface IdempotencyStore {
  /** Records a key for a run; false when the key is already taken (read it with getIdempotency). */
  putIdempotency(record: IdempotencyRecord): Promise<boolean>;
  /**
   * The record, unless it was created before `createdAfter`: records expire
   * after `idempotencyWindowMs`, and the store prunes them (a TTL index on
   * MongoDB, which removes them only every minute or so: hence this check).
   */
  getIdempotency(organizationId: string, key: string, createdAfter: Date): Promise<IdempotencyRecord | undefined>;
  /** Deletes the record only while it still names `runId` (an expired record, or a create that failed). */
  deleteIdempotency(organizationId: string, key: string, runId: string): Promise<void>;
  /**
   * Takes the key over from a stalled attempt: granted to one caller per
   * attempt number (a unique insert), which then records its own attempt.
   */
  takeOverIdempotency(organizationId: string, key: string, attempt: number, at: Date): Promise<boolean>;
}
