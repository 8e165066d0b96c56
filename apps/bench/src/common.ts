import { performance } from 'node:perf_hooks';
import { closedLoop, REQUEST_TIMEOUT_MS, RunResult, Sent } from './load';
import { Route, WebhookReceiver } from './webhook-receiver';

export class BenchFailure extends Error {}

export function envInt(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max)
    throw new BenchFailure(`${name} must be a whole number from ${min} to ${max}, not ${JSON.stringify(raw)}`);
  return Number(raw);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const progress = (line: string) => process.stderr.write(`· ${line}\n`);

export const ADMIN_TOKEN = 'bench-admin-token-0123456789';

/** The launch of docs/api.md's example, as a partner sends it. */
export const LAUNCH_BODY = JSON.stringify({
  channel: 'meta_ads',
  campaign: {
    name: 'bench',
    objective: 'conversion',
    budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
    schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
  },
});

/** One Admin/API call outside the measured loops, bounded, with a clear failure. */
export async function call(method: string, url: string, token: string, body?: unknown): Promise<any> {
  const response = await fetch(url, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await response.text();
  if (!response.ok) throw new BenchFailure(`${method} ${new URL(url).pathname} answered ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * A test-mode account with a balance no run can exhaust, and one webhook endpoint per route on
 * the receiver; returns the API key's headers for a launch.
 */
export async function openAccount(
  base: string,
  receiver: WebhookReceiver,
  name: string,
  endpoints: { route: string; events: string[] }[],
): Promise<Record<string, string>> {
  const account = await call('POST', `${base}/admin/v1/accounts`, ADMIN_TOKEN, { name, credits: 1_000_000 });
  const key: string = (await call('POST', `${base}/admin/v1/accounts/${account.data.id}/keys`, ADMIN_TOKEN, { mode: 'test' })).data.key;
  for (const { route, events } of endpoints) {
    const r = receiver.route(route);
    const endpoint = await call('POST', `${base}/v1/webhooks`, key, { url: r.url, events });
    r.secret = endpoint.data.signing_secret;
  }
  return { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` };
}

/** A launch refused by the overload bound (docs/api.md#dispatches-and-retries): 503 service_unavailable, nothing charged. */
export const shedByOverload = (s: Sent): boolean =>
  s.status === 503 && s.body?.error?.code === 'service_unavailable' && /are waiting/.test(String(s.body?.error?.message));

/**
 * Every non-200 of a run, summarised as "count x status: first error". Launches shed by the
 * overload bound are listed apart (`shed`) and not counted as failures: refusing them is what the
 * service is meant to do past its backlog's bound.
 */
export function failuresOf(sent: Sent[]): { count: number; shed: number; summary: string[] } {
  const byStatus = new Map<number, { count: number; example: string }>();
  let shed = 0;
  for (const s of sent) {
    if (s.status === 200) continue;
    if (shedByOverload(s)) {
      shed++;
      continue;
    }
    const entry = byStatus.get(s.status) ?? { count: 0, example: s.error ?? '' };
    entry.count++;
    byStatus.set(s.status, entry);
  }
  const summary = [...byStatus].map(([status, { count, example }]) => `${count} x ${status === 0 ? 'no response' : `HTTP ${status}`}: ${example}`);
  if (shed > 0) summary.push(`${shed} x HTTP 503 shed by the overload bound (DISPATCH_BACKLOG_SECONDS)`);
  return { count: [...byStatus.values()].reduce((n, e) => n + e.count, 0), shed, summary };
}

/** The answered launches of a run and their dispatch ids. */
export function acceptedOf(run: RunResult): { sent: Sent[]; ids: string[] } {
  const sent = run.sent.filter((s) => s.status === 200 && typeof s.body?.data?.id === 'string');
  return { sent, ids: sent.map((s) => s.body.data.id as string) };
}

/** Polls until `done()` holds or `timeoutMs` passes; true if it held. */
export async function waitUntil(done: () => boolean, timeoutMs: number, pollMs = 50): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() >= deadline) return false;
    await sleep(pollMs);
  }
  return true;
}

/** Waits (bounded) until the route holds a signed dispatch.completed for every id; returns how many it holds. */
export async function waitForCompletions(route: Route, ids: string[], timeoutMs: number): Promise<number> {
  const arrived = () => ids.reduce((n, id) => n + (route.completedAt.has(id) ? 1 : 0), 0);
  await waitUntil(() => arrived() === ids.length, timeoutMs);
  return arrived();
}

/**
 * A closed loop of `launches` to `base`, then every accepted launch's signed dispatch.completed
 * awaited at `route`: fails the run (as `what`) if one has not arrived within `timeoutMs`.
 */
export async function launchesAwaited(
  what: string,
  base: string,
  headers: Record<string, string>,
  route: Route,
  s: { launches: number; concurrency: number; timeoutMs: number },
): Promise<{ run: RunResult; ids: string[] }> {
  const run = await closedLoop(s.launches, s.concurrency, `${base}/v1/campaigns`, headers, LAUNCH_BODY);
  const { ids } = acceptedOf(run);
  const arrived = await waitForCompletions(route, ids, s.timeoutMs);
  if (arrived < ids.length) throw new BenchFailure(`${what}: only ${arrived}/${ids.length} webhooks arrived within ${s.timeoutMs / 1000} s`);
  return { run, ids };
}

/**
 * Waits until the receiver has had no request for `quietMs` (the service has worked off what an
 * earlier phase left, e.g. launches whose answers the client gave up on), at most `maxMs`.
 */
export async function waitQuiet(receiver: WebhookReceiver, quietMs: number, maxMs: number): Promise<boolean> {
  let last = receiver.requests;
  let lastChange = performance.now();
  return waitUntil(
    () => {
      if (receiver.requests !== last) {
        last = receiver.requests;
        lastChange = performance.now();
      }
      return performance.now() - lastChange >= quietMs;
    },
    maxMs,
    100,
  );
}
