/** Reading the Prometheus text format the admin port serves, as a scraper would. */

/** The value of the sample `name{labels}` (labels matched exactly), or undefined when there is none. */
export function sampleValue(exposition: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels)
    .map(([key, value]) => `${key}="${value}"`)
    .sort()
    .join(',');
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const labelText = (match[2] ?? '').split(',').filter(Boolean).sort().join(',');
    if (labelText === wanted) return Number(match[3]);
  }
  return undefined;
}

/** `# TYPE` lines: metric name to its type. */
export function metricTypes(exposition: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const match of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(match[1]!, match[2]!);
  return types;
}

export async function scrape(adminPort: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${adminPort}/metrics`);
  if (!response.ok) throw new Error(`/metrics answered ${response.status}`);
  return response.text();
}

/** Polls until `check` stops throwing (metrics of a stream are recorded when Envoy closes it, just after the answer). */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}
