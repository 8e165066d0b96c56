/**
 * Reading an app's Prometheus metrics, as a scraper would: GET /metrics on the app's METRICS_PORT
 * (never its API port, which answers 404 there), text exposition format.
 */

/** An app as Prometheus sees it: where its metrics port answers (ServiceProcess.metricsUrl). */
export interface Scraped {
  readonly metricsUrl: string;
}

/** The text an app serves at /metrics on its metrics port. */
export async function scrapeMetrics(app: Scraped): Promise<string> {
  const response = await fetch(`${app.metricsUrl}/metrics`);
  if (!response.ok) throw new Error(`GET ${app.metricsUrl}/metrics answered ${response.status}`);
  return response.text();
}

/**
 * The value of one sample (`name{labels} value`), or undefined when the app does not report it.
 * Labels must match exactly, in the order the app writes them; none for a sample without labels.
 */
export function sampleValue(metrics: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const rendered = Object.entries(labels)
    .map(([label, value]) => `${label}="${value}"`)
    .join(',');
  const series = rendered ? `${name}{${rendered}}` : name;
  const line = metrics.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Scrapes the app and reads one sample (undefined when not reported). */
export async function metricValue(app: Scraped, name: string, labels?: Record<string, string>): Promise<number | undefined> {
  return sampleValue(await scrapeMetrics(app), name, labels);
}
