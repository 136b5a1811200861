/**
 * When a change to a record is recorded: `at`, but always later than the
 * record's previous `updated_at`, so a client comparing the two sees every
 * change, even one made within the millisecond of the last (docs/behaviour.md §7:
 * after an upload, `updated_at` reflects it).
 */
export function updateTime(previous: Date, at: Date): Date {
  return new Date(Math.max(at.getTime(), previous.getTime() + 1));
}
