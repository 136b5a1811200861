/**
 * Waits until the clock has passed `iso` (a time the server stored, in
 * milliseconds), so that a change made next must get a later time: a test can
 * then ask for `updated_at` to move, not merely not to go back.
 */
export async function laterThan(iso: string): Promise<void> {
  const stored = Date.parse(iso);
  while (Date.now() <= stored) await new Promise((resolve) => setTimeout(resolve, 1));
}
