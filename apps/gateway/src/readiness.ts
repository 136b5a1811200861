/**
 * What /readyz reports: whether this process can serve (503 when not), and
 * how the services it calls and its NATS connection are doing (for people
 * and monitors; neither makes the process unready: see docs/decisions.md,
 * "Readiness does not cascade").
 */
export interface Readiness {
  ready: boolean;
  services?: Record<string, "ready" | "unavailable">;
  /** The NATS connection, when the process has one (bus/bus.ts `busReadiness`). */
  bus?: "connected" | "disconnected";
}

/** Each service's own /readyz, by name; a service that does not answer in 2 s is unavailable. */
export async function servicesStatus(
  baseUrls: Record<string, string>,
): Promise<Record<string, "ready" | "unavailable">> {
  const answers = await Promise.all(
    Object.entries(baseUrls).map(async ([name, url]) => {
      const ok = await fetch(new URL("/readyz", url), { signal: AbortSignal.timeout(2_000) }).then(
        (res) => res.ok,
        () => false,
      );
      return [name, ok ? "ready" : "unavailable"] as const;
    }),
  );
  return Object.fromEntries(answers);
}
