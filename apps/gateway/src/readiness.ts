/** The gateway is ready when every service it calls says it is (their /readyz). */
export async function servicesReady(baseUrls: string[]): Promise<boolean> {
  const answers = await Promise.all(
    baseUrls.map((url) =>
      fetch(new URL("/readyz", url), { signal: AbortSignal.timeout(2_000) }).then(
        (res) => res.ok,
        () => false,
      ),
    ),
  );
  return answers.every(Boolean);
}
