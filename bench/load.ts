import autocannon from "autocannon";

export interface LoadResult {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/** Drives one URL with autocannon: a warm-up (1 s unless told), then the measured run; a GET unless `request` says. */
export async function load(
  name: string,
  url: string,
  headers: Record<string, string>,
  seconds: number,
  connections: number,
  warmUpSeconds = 1,
  request: { method?: "GET" | "POST"; body?: string } = {},
): Promise<LoadResult> {
  if (warmUpSeconds > 0) await autocannon({ url, headers, connections, duration: warmUpSeconds, ...request });
  const result = await autocannon({ url, headers, connections, duration: seconds, ...request });
  return {
    name,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/** The p-th percentile of sorted values (0 when there are none). */
export const percentile = (sorted: ArrayLike<number>, p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0;

export function printTable(title: string, rows: Array<Record<string, string | number>>): void {
  console.log(`\n${title}`);
  console.table(rows);
}
