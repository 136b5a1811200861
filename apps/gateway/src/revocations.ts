/**
 * The API keys this replica has heard are deleted (from the bus, and from the
 * DELETE it served itself), in the order heard. An authentication that was
 * in flight when a key was deleted may come back saying the key is fine:
 * `mark()` before asking identity and `revokedSince(key, mark)` after tell
 * such an answer apart, so it is neither trusted nor cached. Listeners (the
 * principal cache, the open streams) act on each revocation at once.
 */
export function createRevocations(options: { remember?: number } = {}) {
  const remember = options.remember ?? 10_000;
  /** Counts revocations heard; a mark is its value at some moment. */
  let heard = 0;
  /** Revoked key id → the count at which it was heard, oldest first. */
  const log = new Map<string, number>();
  /** The newest count dropped from the log: a mark older than it cannot be answered precisely. */
  let forgottenUpTo = 0;
  const listeners: Array<(apiKeyId: string) => void> = [];

  return {
    /** A point in the order of revocations, to compare against later. */
    mark: (): number => heard,
    /** Whether `apiKeyId` was revoked after `mark` (when the log no longer says, conservatively yes). */
    revokedSince(apiKeyId: string, mark: number): boolean {
      return (log.get(apiKeyId) ?? 0) > mark || forgottenUpTo > mark;
    },
    revoke(apiKeyId: string): void {
      heard++;
      log.delete(apiKeyId);
      log.set(apiKeyId, heard);
      if (log.size > remember) {
        const [oldest, at] = log.entries().next().value!;
        log.delete(oldest);
        forgottenUpTo = at;
      }
      for (const listener of listeners) listener(apiKeyId);
    },
    onRevoke(listener: (apiKeyId: string) => void): void {
      listeners.push(listener);
    },
  };
}

export type Revocations = ReturnType<typeof createRevocations>;
