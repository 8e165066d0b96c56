/**
 * `npm run bench`: how fast the standalone service takes sandbox launches and how long until the
 * partner holds a signed `dispatch.completed`, next to a bare Express handler measured the same
 * way on the same machine, so the numbers mean something on whatever machine runs them.
 *
 *   BENCH_LAUNCHES            measured launches (default 2000)
 *   BENCH_CONCURRENCY         requests in flight, for the baseline and the service alike (default 32)
 *   BENCH_BASELINE_REQUESTS   measured baseline requests (default 10000: long enough to be steady)
 *   BENCH_WEBHOOK_TIMEOUT_S   how long to wait for the last webhook after the last POST (default 120)
 *   BENCH_DEADLINE_S          the whole run, after which everything is stopped and it fails (default 900)
 *
 * Only 127.0.0.1 is used. The client, the webhook receiver and the timing live in this process;
 * the baseline server and the service each run in a child process, as in production.
 */
import { availableParallelism, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ascending, closedLoop, percentile, REQUEST_TIMEOUT_MS, RunResult } from './load';
import { Child, cleanup, freePort, makeTempDir } from './processes';
import { WebhookReceiver } from './webhook-receiver';

const ROOT = resolve(__dirname, '../../../..'); // dist/apps/bench/src -> repository root
const SERVICE_MAIN = join(ROOT, 'dist', 'apps', 'standalone', 'src', 'main.js');
const BASELINE_MAIN = join(__dirname, 'baseline-server.js');
const ADMIN_TOKEN = 'bench-admin-token-0123456789';
const WARMUP_LAUNCHES = 100;
const WARMUP_BASELINE_REQUESTS = 1000;

class BenchFailure extends Error {}

function envInt(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new BenchFailure(`${name} must be a whole number from ${min} to ${max}, not ${JSON.stringify(raw)}`);
  return Number(raw);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const progress = (line: string) => process.stderr.write(`· ${line}\n`);
const ms = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1)) + ' ms';

/** The launch of API.md's example, as a partner sends it. */
const LAUNCH_BODY = JSON.stringify({
  channel: 'meta_ads',
  campaign: {
    name: 'bench',
    objective: 'conversion',
    budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
    schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
  },
});

/** One Admin/API call outside the measured loops, bounded, with a clear failure. */
async function call(method: string, url: string, token: string, body?: unknown): Promise<any> {
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

/** Every non-200 of a run, summarised as "count x status: first error". */
function failuresOf(run: RunResult): { count: number; summary: string[] } {
  const byStatus = new Map<number, { count: number; example: string }>();
  for (const s of run.sent) {
    if (s.status === 200) continue;
    const entry = byStatus.get(s.status) ?? { count: 0, example: s.error ?? '' };
    entry.count++;
    byStatus.set(s.status, entry);
  }
  const summary = [...byStatus].map(([status, { count, example }]) => `${count} x ${status === 0 ? 'no response' : `HTTP ${status}`}: ${example}`);
  return { count: [...byStatus.values()].reduce((n, e) => n + e.count, 0), summary };
}

/** Waits (bounded) until the receiver holds a signed dispatch.completed for every id. */
async function waitForWebhooks(receiver: WebhookReceiver, ids: string[], timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  const arrived = () => ids.reduce((n, id) => n + (receiver.completedAt.has(id) ? 1 : 0), 0);
  let count = arrived();
  while (count < ids.length && performance.now() < deadline) {
    await sleep(50);
    count = arrived();
  }
  return count;
}

async function measureBaseline(concurrency: number, requests: number, headers: Record<string, string>) {
  progress(`baseline: bare Express handler, ${WARMUP_BASELINE_REQUESTS} warm-up + ${requests} requests at concurrency ${concurrency}`);
  const server = Child.spawn(BASELINE_MAIN, {}, { cwd: ROOT, ipc: true });
  const { port } = await server.firstMessage<{ port: number }>(15_000);
  const url = `http://127.0.0.1:${port}/v1/campaigns`;
  // Warm-up: JIT, sockets of the pool. Not counted.
  await closedLoop(WARMUP_BASELINE_REQUESTS, concurrency, url, headers, LAUNCH_BODY);
  const run = await closedLoop(requests, concurrency, url, headers, LAUNCH_BODY);
  // Stopped before the service starts, so the two measurements never compete for the 2 cores.
  await server.stop();
  const failures = failuresOf(run);
  if (failures.count > 0) throw new BenchFailure(`the baseline itself failed ${failures.count} of ${requests} requests:\n  ${failures.summary.join('\n  ')}`);
  const latencies = ascending(run.sent.map((s) => s.latencyMs));
  return { perSecond: requests / (run.wallMs / 1000), p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function main(): Promise<number> {
  // Shown in the header: a busy machine (another build, a test run) skews every number below.
  const loadAtStart = loadavg()[0];
  const launches = envInt('BENCH_LAUNCHES', 2000, 1, 100_000);
  const concurrency = envInt('BENCH_CONCURRENCY', 32, 1, 1024);
  const baselineRequests = envInt('BENCH_BASELINE_REQUESTS', 10_000, 1, 1_000_000);
  const webhookTimeoutMs = envInt('BENCH_WEBHOOK_TIMEOUT_S', 120, 1, 3600) * 1000;
  const deadlineMs = envInt('BENCH_DEADLINE_S', 900, 10, 24 * 3600) * 1000;

  // The outer bound on everything: whatever hangs, the run ends, and the children with it.
  setTimeout(() => {
    process.stderr.write(`\nbench: FAILED: did not finish within BENCH_DEADLINE_S (${deadlineMs / 1000} s); stopping.\n`);
    void cleanup().finally(() => process.exit(1));
  }, deadlineMs).unref();

  // ---- 1. baseline -------------------------------------------------------------------------
  // The same headers as a launch (with a key of the same shape) so both servers read the same bytes.
  const baselineHeaders = { 'Content-Type': 'application/json', Authorization: `Bearer mk_test_${'x'.repeat(40)}` };
  const baseline = await measureBaseline(concurrency, baselineRequests, baselineHeaders);

  // ---- 2. the service ----------------------------------------------------------------------
  const receiver = await WebhookReceiver.start();
  const dataDir = makeTempDir('campaign-ops-bench-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  progress(`service: starting ${SERVICE_MAIN} on ${base}`);
  const service = Child.spawn(
    SERVICE_MAIN,
    {
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dataDir,
      ADMIN_TOKEN,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      LOG_LEVEL: 'warn',
      // The bench measures capacity, not policy: at the default per-key limit (100/s, burst 200)
      // it would measure the limit and fail on 429s. The limiter still runs on every request.
      RATE_LIMIT_PER_SECOND: '1000000',
      RATE_LIMIT_BURST: '1000000',
    },
    { cwd: ROOT },
  );
  try {
    await service.waitUntilOk(`${base}/readyz`, 30_000);
  } catch (error) {
    throw new BenchFailure(`the service failed to start: ${(error as Error).message}`);
  }

  // A balance no run can exhaust, whether or not launches are charged credits.
  const account = await call('POST', `${base}/admin/v1/accounts`, ADMIN_TOKEN, { name: 'bench', credits: 1_000_000 });
  const key: string = (await call('POST', `${base}/admin/v1/accounts/${account.data.id}/keys`, ADMIN_TOKEN, { mode: 'test' })).data.key;
  const endpoint = await call('POST', `${base}/v1/webhooks`, key, { url: receiver.url, events: ['dispatch.completed'] });
  receiver.setSecret(endpoint.data.signing_secret);
  const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` };
  const launchUrl = `${base}/v1/campaigns`;
  // From here on, at LOG_LEVEL=warn, anything the service writes is worth reporting.
  service.markReady();

  // Warm-up, and its webhooks awaited, so the measured run starts with nothing in flight.
  progress(`service: ${WARMUP_LAUNCHES} warm-up launches`);
  const warmup = await closedLoop(WARMUP_LAUNCHES, concurrency, launchUrl, headers, LAUNCH_BODY);
  const warmupFailures = failuresOf(warmup);
  if (warmupFailures.count > 0) throw new BenchFailure(`${warmupFailures.count} of ${WARMUP_LAUNCHES} warm-up launches failed:\n  ${warmupFailures.summary.join('\n  ')}`);
  const warmupIds = warmup.sent.map((s) => s.body.data.id as string);
  const warmupArrived = await waitForWebhooks(receiver, warmupIds, 60_000);
  if (warmupArrived < warmupIds.length) throw new BenchFailure(`only ${warmupArrived}/${warmupIds.length} warm-up webhooks arrived within 60 s`);

  progress(`service: ${launches} launches at concurrency ${concurrency}`);
  const postsStartedAt = performance.now();
  const run = await closedLoop(launches, concurrency, launchUrl, headers, LAUNCH_BODY);
  const postsDoneAt = performance.now();
  const failures = failuresOf(run);
  const accepted = run.sent.filter((s) => s.status === 200 && typeof s.body?.data?.id === 'string');
  const ids = accepted.map((s) => s.body.data.id as string);
  progress(`service: POSTs done in ${(run.wallMs / 1000).toFixed(1)} s; waiting up to ${webhookTimeoutMs / 1000} s for ${ids.length} webhooks`);
  const delivered = await waitForWebhooks(receiver, ids, webhookTimeoutMs);
  const arrivals = ids.filter((id) => receiver.completedAt.has(id)).map((id) => receiver.completedAt.get(id)!);
  const lastArrival = arrivals.length > 0 ? Math.max(...arrivals) : NaN;
  // How fast completions come out the far end: delivered webhooks over first POST -> last arrival.
  const completionsPerSecond = arrivals.length / ((lastArrival - postsStartedAt) / 1000);

  // Latency from just before a POST was sent to its signed webhook's arrival, on one clock.
  const arrivedSends = accepted.filter((s) => receiver.completedAt.has(s.body.data.id));
  const e2e = ascending(arrivedSends.map((s) => receiver.completedAt.get(s.body.data.id)! - s.startedAt));
  // Where that time goes, split at the event's own timestamp (the service's wall clock, ms
  // resolution; same machine, so the same clock as performance.timeOrigin + now()).
  const epoch = (t: number) => performance.timeOrigin + t;
  const withTimestamp = arrivedSends.filter((s) => Number.isFinite(receiver.eventTimestamp.get(s.body.data.id)));
  const toCompleted = ascending(withTimestamp.map((s) => receiver.eventTimestamp.get(s.body.data.id)! - epoch(s.startedAt)));
  const toArrival = ascending(withTimestamp.map((s) => epoch(receiver.completedAt.get(s.body.data.id)!) - receiver.eventTimestamp.get(s.body.data.id)!));
  const postLatency = ascending(run.sent.map((s) => s.latencyMs));
  const launchesPerSecond = launches / (run.wallMs / 1000);

  // Evidence for anything missing: what the service itself says about a few of those dispatches.
  const missing = ids.filter((id) => !receiver.completedAt.has(id));
  const missingStates: string[] = [];
  for (const id of missing.slice(0, 5)) {
    try {
      const dispatch = (await call('GET', `${base}/v1/dispatches/${id}`, key)).data;
      missingStates.push(`${id}: status ${dispatch.status}${dispatch.error ? `, error ${JSON.stringify(dispatch.error)}` : ''}`);
    } catch (error) {
      missingStates.push(`${id}: ${(error as Error).message}`);
    }
  }
  const serviceLogLines = service.linesSinceReady;
  const serviceLogTail = serviceLogLines > 0 ? service.lastLines(Math.min(5, serviceLogLines)) : [];
  await service.stop();
  await receiver.close();

  // ---- 3. the table ------------------------------------------------------------------------
  const row = (label: string, value: string) => `  ${label.padEnd(36)}${value}`;
  const lines = [
    `campaign-ops benchmark (node ${process.version}, ${availableParallelism()} cores, N=${launches}, concurrency=${concurrency}, load avg ${loadAtStart.toFixed(2)} at start)`,
    row('bare express handler', `${baseline.perSecond.toFixed(0).padStart(6)} req/s        (baseline: ${baselineRequests} requests, same client, same machine)`),
    row('bare express latency', `p50 ${ms(baseline.p50)}  p99 ${ms(baseline.p99)}`),
    row('sandbox launches via gateway', `${launchesPerSecond.toFixed(0).padStart(6)} launches/s   (${((100 * launchesPerSecond) / baseline.perSecond).toFixed(1)}% of baseline; ${accepted.length}/${launches} answered 200)`),
    row('POST latency', `p50 ${ms(percentile(postLatency, 50))}  p99 ${ms(percentile(postLatency, 99))}  max ${ms(postLatency[postLatency.length - 1])}`),
    row(
      'POST -> signed dispatch.completed',
      e2e.length > 0
        ? `p50 ${ms(percentile(e2e, 50))}  p99 ${ms(percentile(e2e, 99))}  max ${ms(e2e[e2e.length - 1])}  (${delivered}/${ids.length} delivered, ${receiver.badSignatures} bad signatures)`
        : `none arrived (0/${ids.length} delivered, ${receiver.badSignatures} bad signatures)`,
    ),
    ...(toCompleted.length > 0
      ? [
          row('  of which POST -> completed', `p50 ${ms(percentile(toCompleted, 50))}  p99 ${ms(percentile(toCompleted, 99))}  max ${ms(toCompleted[toCompleted.length - 1])}  (the event's timestamp)`),
          row('  of which completed -> webhook', `p50 ${ms(percentile(toArrival, 50))}  p99 ${ms(percentile(toArrival, 99))}  max ${ms(toArrival[toArrival.length - 1])}`),
        ]
      : []),
    row('signed dispatch.completed rate', arrivals.length > 0 ? `${completionsPerSecond.toFixed(0).padStart(6)} webhooks/s   (first POST -> last webhook; the last came ${ms(lastArrival - postsDoneAt)} after the last POST)` : '-'),
  ];
  const extras = [
    receiver.duplicates > 0 ? `${receiver.duplicates} duplicate dispatch.completed deliveries (same dispatch, validly signed)` : '',
    receiver.unexpected > 0 ? `${receiver.unexpected} validly signed requests that were not a dispatch.completed` : '',
    receiver.malformed > 0 ? `${receiver.malformed} webhook requests that were too large or not JSON` : '',
    serviceLogLines > 0 ? `the service logged ${serviceLogLines} line(s) at LOG_LEVEL=warn during the run; last:\n      ${serviceLogTail.join('\n      ')}` : '',
  ].filter(Boolean);
  process.stdout.write(lines.join('\n') + '\n' + extras.map((e) => `  note: ${e}\n`).join(''));

  const problems: string[] = [];
  if (failures.count > 0) problems.push(`${failures.count} of ${launches} launches did not answer 200:\n    ${failures.summary.join('\n    ')}`);
  if (delivered < ids.length) {
    problems.push(
      `only ${delivered}/${ids.length} signed dispatch.completed webhooks arrived within ${webhookTimeoutMs / 1000} s after the last POST; ` +
        `${missing.length} missing, e.g.:\n    ${missingStates.join('\n    ')}`,
    );
  }
  if (receiver.badSignatures > 0) problems.push(`${receiver.badSignatures} webhook(s) arrived with a bad X-SERVICE-Signature`);
  if (problems.length > 0) {
    process.stdout.write(`\nbench: FAILED:\n  - ${problems.join('\n  - ')}\n`);
    return 1;
  }
  return 0;
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`\nbench: ${signal}, stopping the child processes and removing temp dirs\n`);
    void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  });
}

main()
  .catch((error: Error) => {
    process.stdout.write(`\nbench: FAILED: ${error instanceof BenchFailure ? error.message : (error.stack ?? error.message)}\n`);
    return 1;
  })
  .then(async (code) => {
    await cleanup();
    // Explicit: fetch's keep-alive pool would otherwise hold the process open for a few seconds.
    process.exit(code);
  });
