/** One scrape of a `/metrics` (Prometheus text format): every sample with its labels. */
export interface Scrape {
  samples: Array<{ name: string; labels: Record<string, string>; value: number }>;
  /**
   * The sum of the samples named `name` whose labels include `labels`;
   * undefined when there is none (a series that is missing, not zero).
   */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export async function scrapeMetrics(url: string): Promise<Scrape> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  if (!res.headers.get("content-type")?.startsWith("text/plain"))
    throw new Error(`${url} is not in the text format: ${res.headers.get("content-type")}`);
  const samples: Scrape["samples"] = [];
  for (const line of (await res.text()).split("\n")) {
    const match = sampleLine.exec(line);
    if (!match || line.startsWith("#")) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? "").matchAll(labelPair))
      labels[key!] = value!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return {
    samples,
    value(name, wanted = {}) {
      const matching = samples.filter(
        (s) => s.name === name && Object.entries(wanted).every(([k, v]) => s.labels[k] === v),
      );
      return matching.length === 0 ? undefined : matching.reduce((sum, s) => sum + s.value, 0);
    },
  };
}

/** How much a series grew between two scrapes (a series missing before counts from 0; missing after: NaN, which fails any check). */
export function growth(before: Scrape, after: Scrape, name: string, labels?: Record<string, string>): number {
  const now = after.value(name, labels);
  return now === undefined ? Number.NaN : now - (before.value(name, labels) ?? 0);
}
