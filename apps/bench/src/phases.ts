/**
 * The measurements, each a function that drives one phase, writes its detail section and any
 * failure of correctness into the report, and returns the figures the goals are judged on.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { acceptedOf, BenchFailure, failuresOf, LAUNCH_BODY, progress, sleep, waitForCompletions, waitUntil } from './common';
import { ascending, closedLoop, pacedLoop, percentile, RunResult, Sent } from './load';
import { Child } from './processes';
import { CpuMeter, procAvailable, ThreadMeter, ThreadRow } from './proc-stats';
import { Report, ms, perSecond, row } from './report';
import { Route, sign, WebhookReceiver } from './webhook-receiver';

const BASELINE_MAIN = join(__dirname, 'baseline-server.js');

/** What the phases need of the system under test: its gateway and the processes whose CPU counts. */
export interface System {
  base: string;
  pids(): number[];
}

const latencies = (sent: Sent[]) => ascending(sent.map((s) => s.latencyMs));
const dist = (sorted: number[]) => `p50 ${ms(percentile(sorted, 50))}  p99 ${ms(percentile(sorted, 99))}  max ${ms(sorted[sorted.length - 1])}`;

/** A baseline server (BASELINE=express, http or floor, with `env` beside) in its own process, for the length of `use`. */
async function withBaseline<T>(
  kind: 'express' | 'http' | 'floor',
  root: string,
  use: (url: string, cpu: CpuMeter) => Promise<T>,
  env: Record<string, string> = {},
): Promise<T> {
  const server = Child.spawn(BASELINE_MAIN, { BASELINE: kind, ...env }, { cwd: root, ipc: true });
  try {
    const { port } = await server.firstMessage<{ port: number }>(15_000);
    return await use(`http://127.0.0.1:${port}/v1/campaigns`, new CpuMeter(() => [server.pid]));
  } finally {
    // Stopped before anything else starts, so two measurements never compete for the cores.
    await server.stop();
  }
}

function requireAllOk(what: string, run: RunResult): void {
  const failures = failuresOf(run.sent);
  if (failures.count > 0) throw new BenchFailure(`${what} failed ${failures.count} of ${run.sent.length} requests:\n  ${failures.summary.join('\n  ')}`);
}

/**
 * The client's headroom: the same closed loop against bare node:http. If the client cannot drive
 * a server that does nothing well past the service's goals, every ratio below flatters the service.
 */
export async function measureHeadroom(root: string, requests: number, concurrency: number, headers: Record<string, string>) {
  progress(`client headroom: bare node:http server, ${requests} requests at concurrency ${concurrency}`);
  return withBaseline('http', root, async (url) => {
    await closedLoop(Math.min(3000, requests), concurrency, url, headers, LAUNCH_BODY);
    const run = await closedLoop(requests, concurrency, url, headers, LAUNCH_BODY);
    requireAllOk('the bare node:http server', run);
    return { perSecond: requests / (run.wallMs / 1000) };
  });
}

export type ExpressBaseline = {
  perSecond: number;
  p50: number;
  p99: number;
  cpuMsPerRequest: number;
  paced?: PacedFigures;
};

export type PacedFigures = { count: number; answered: number; p50: number; p99: number; cpuMsPerRequest: number; sendLagP99Ms: number };

/** The bare Express handler: a closed loop (throughput, CPU per request) and optionally the paced load. */
export async function measureExpress(
  root: string,
  concurrency: number,
  requests: number,
  headers: Record<string, string>,
  paced: { rate: number; durationMs: number; maxSockets: number } | null,
): Promise<ExpressBaseline> {
  progress(`baseline: bare Express handler, 1000 warm-up + ${requests} requests at concurrency ${concurrency}`);
  return withBaseline('express', root, async (url, cpu) => {
    // Warm-up: JIT, sockets of the pool. Not counted.
    await closedLoop(1000, concurrency, url, headers, LAUNCH_BODY);
    cpu.start();
    const run = await closedLoop(requests, concurrency, url, headers, LAUNCH_BODY);
    const closedCpu = cpu.stop();
    requireAllOk('the Express baseline', run);
    const sorted = latencies(run.sent);
    const result: ExpressBaseline = {
      perSecond: requests / (run.wallMs / 1000),
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      cpuMsPerRequest: closedCpu.cpuMs / requests,
    };
    if (paced) {
      progress(`baseline: bare Express handler paced at ${paced.rate}/s for ${paced.durationMs / 1000} s`);
      cpu.start();
      const open = await pacedLoop(paced.rate, paced.durationMs, paced.maxSockets, url, headers, LAUNCH_BODY);
      const pacedCpu = cpu.stop();
      const sortedPaced = latencies(open.sent);
      result.paced = {
        count: open.sent.length,
        answered: open.sent.filter((s) => s.status === 200).length,
        p50: percentile(sortedPaced, 50),
        p99: percentile(sortedPaced, 99),
        cpuMsPerRequest: pacedCpu.cpuMs / open.sent.length,
        sendLagP99Ms: open.sendLagP99Ms,
      };
    }
    return result;
  });
}

/** The floor at full load (closed loop) and paced at the gentle rate: the baselines of the CPU goals at each. */
export type FloorFigures = { perSecond: number; cpuMsPerLaunch: number; gentle: { rate: number; cpuMsPerLaunch: number } };

/**
 * The floor (baseline-server.ts, BASELINE=floor): what a launch must cost on this machine without
 * any framework. After `warmup` launches (as many as the service's warm-up), a closed loop of
 * launches, each awaited to its signed webhook at the receiver, then the gentle pace (an open loop
 * at `gentle.rate`, as the service gets it): CPU of the floor's process from the first POST to the
 * last webhook of each, as the service's is counted. On a VM a process that sleeps between requests
 * pays for every wake-up, so a launch costs more at 40/s than at full load, the floor's too.
 */
export async function measureFloor(
  root: string,
  receiver: WebhookReceiver,
  caCertPath: string,
  s: { warmup: number; launches: number; concurrency: number; gentle: { rate: number; durationMs: number; maxSockets: number } },
  headers: Record<string, string>,
): Promise<FloorFigures> {
  const { warmup, launches, concurrency, gentle } = s;
  progress(
    `floor: node:http + SQLite + HTTPS webhooks, no framework, ${warmup} warm-up + ${launches} launches at concurrency ${concurrency}, then paced at ${gentle.rate}/s`,
  );
  const route = receiver.route('floor');
  route.secret = 'floor-secret-0123456789';
  const env = { FLOOR_WEBHOOK_URL: route.url, FLOOR_SECRET: route.secret, NODE_EXTRA_CA_CERTS: caCertPath };
  return withBaseline(
    'floor',
    root,
    async (url, cpu) => {
      const warm = await closedLoop(warmup, concurrency, url, headers, LAUNCH_BODY);
      requireAllOk('the floor', warm);
      await waitForCompletions(route, acceptedOf(warm).ids, 60_000);
      const measured = async (run: () => Promise<RunResult>) => {
        cpu.start();
        const result = await run();
        requireAllOk('the floor', result);
        const { ids } = acceptedOf(result);
        const arrived = await waitForCompletions(route, ids, 60_000);
        const used = cpu.stop();
        if (arrived < ids.length) throw new BenchFailure(`the floor: only ${arrived}/${ids.length} webhooks arrived within 60 s`);
        return { result, cpuMsPerLaunch: used.cpuMs / ids.length };
      };
      const closed = await measured(() => closedLoop(launches, concurrency, url, headers, LAUNCH_BODY));
      const paced = await measured(() => pacedLoop(gentle.rate, gentle.durationMs, gentle.maxSockets, url, headers, LAUNCH_BODY));
      return {
        perSecond: launches / (closed.result.wallMs / 1000),
        cpuMsPerLaunch: closed.cpuMsPerLaunch,
        gentle: { rate: gentle.rate, cpuMsPerLaunch: paced.cpuMsPerLaunch },
      };
    },
    env,
  );
}

/** The receiver's own rate from a plain keep-alive https client (in this process, so a lower bound). */
export async function measureReceiverRaw(receiver: WebhookReceiver, ca: string, requests: number, concurrency: number) {
  progress(`webhook receiver: ${requests} signed requests from a plain keep-alive https client`);
  const route = receiver.route('raw');
  route.secret = 'raw-secret';
  const body = JSON.stringify({ id: 'evt_raw', event: 'bench.raw', timestamp: new Date().toISOString(), data: {} });
  const headers = { 'Content-Type': 'application/json', 'X-SERVICE-Signature': sign(route.secret, body) };
  const before = receiver.counters();
  const run = await closedLoop(requests, concurrency, route.url, headers, body, { ca });
  requireAllOk('the webhook receiver', run);
  return { perSecond: requests / (run.wallMs / 1000), handshakes: receiver.handshakes - before.handshakes };
}

export type ClosedFigures = {
  launches: number;
  launchesPerSecond: number;
  cpuMsPerLaunch: number;
  delivered: number;
  accepted: number;
  /** POST -> signed dispatch.completed, p50 over the accepted launches; a missing one counts as never. */
  e2eP50: number;
};

/**
 * A closed loop of launches, then the wait (bounded) for each accepted launch's signed
 * dispatch.completed. CPU is counted from the first POST to the last webhook.
 */
export async function closedLaunches(
  report: Report,
  title: string,
  system: System,
  route: Route,
  headers: Record<string, string>,
  launches: number,
  concurrency: number,
  webhookTimeoutMs: number,
): Promise<ClosedFigures> {
  progress(`${title}: ${launches} launches at concurrency ${concurrency}`);
  const threads = procAvailable() ? new ThreadMeter(system.pids).start() : null;
  const cpu = new CpuMeter(system.pids).start();
  const postsStartedAt = performance.now();
  const run = await closedLoop(launches, concurrency, `${system.base}/v1/campaigns`, headers, LAUNCH_BODY);
  const postsDoneAt = performance.now();
  const failures = failuresOf(run.sent);
  const { sent: accepted, ids } = acceptedOf(run);
  progress(`${title}: POSTs done in ${(run.wallMs / 1000).toFixed(1)} s; waiting up to ${webhookTimeoutMs / 1000} s for ${ids.length} webhooks`);
  const delivered = await waitForCompletions(route, ids, webhookTimeoutMs);
  const used = cpu.stop();
  const byThread = threads?.stop();
  const arrivals = ids.filter((id) => route.completedAt.has(id)).map((id) => route.completedAt.get(id)!);
  const lastArrival = arrivals.length > 0 ? Math.max(...arrivals) : NaN;
  const completionsPerSecond = arrivals.length / ((lastArrival - postsStartedAt) / 1000);
  const launchesPerSecond = launches / (run.wallMs / 1000);

  // Latency from just before a POST was sent to its signed webhook's arrival, on one clock; split at
  // the event's own timestamp (the service's wall clock, ms resolution, same machine).
  const arrivedSends = accepted.filter((s) => route.completedAt.has(s.body.data.id));
  const e2e = ascending(arrivedSends.map((s) => route.completedAt.get(s.body.data.id)! - s.startedAt));
  const epoch = (t: number) => performance.timeOrigin + t;
  const withTimestamp = arrivedSends.filter((s) => Number.isFinite(route.eventTimestamp.get(s.body.data.id)));
  const toCompleted = ascending(withTimestamp.map((s) => route.eventTimestamp.get(s.body.data.id)! - epoch(s.startedAt)));
  const toArrival = ascending(withTimestamp.map((s) => epoch(route.completedAt.get(s.body.data.id)!) - route.eventTimestamp.get(s.body.data.id)!));

  report.section(`${title} (closed loop: ${launches} launches, ${concurrency} in flight, then every webhook awaited)`, [
    row(
      'launches',
      `${perSecond(launchesPerSecond)} launches/s   (${accepted.length}/${launches} answered 200${failures.shed > 0 ? `, ${failures.shed} shed: 503 past the backlog's bound` : ''})`,
    ),
    row('POST latency', dist(latencies(run.sent))),
    row(
      'POST -> signed dispatch.completed',
      e2e.length > 0 ? `${dist(e2e)}  (${delivered}/${ids.length} delivered)` : `none arrived (0/${ids.length} delivered)`,
    ),
    ...(toCompleted.length > 0
      ? [row('  of which POST -> completed', `${dist(toCompleted)}  (the event's timestamp)`), row('  of which completed -> webhook', dist(toArrival))]
      : []),
    row(
      'signed dispatch.completed rate',
      arrivals.length > 0
        ? `${perSecond(completionsPerSecond)} webhooks/s   (first POST -> last webhook; the last came ${ms(lastArrival - postsDoneAt)} after the last POST)`
        : '-',
    ),
    row(
      'CPU per launch',
      `${ms(used.cpuMs / launches)}   (${(used.cpuMs / 1000).toFixed(1)} s CPU over ${(used.wallMs / 1000).toFixed(1)} s, first POST -> last webhook)`,
    ),
  ]);
  if (byThread) threadSection(report, title, byThread, launches);
  if (failures.count > 0) report.problem(`${title}: ${failures.count} of ${launches} launches did not answer 200:\n    ${failures.summary.join('\n    ')}`);
  if (delivered < ids.length) {
    const missing = ids.filter((id) => !route.completedAt.has(id));
    report.problem(
      `${title}: only ${delivered}/${ids.length} signed dispatch.completed webhooks arrived within ${webhookTimeoutMs / 1000} s after the last POST; ${missing.length} missing, e.g. ${missing.slice(0, 3).join(', ')}`,
    );
  }
  const e2eP50 = percentile(ascending(accepted.map((s) => (route.completedAt.get(s.body.data.id) ?? Infinity) - s.startedAt)), 50);
  return { launches, launchesPerSecond, cpuMsPerLaunch: used.cpuMs / launches, delivered, accepted: ids.length, e2eP50 };
}

/**
 * Where the closed loop's CPU went by thread, and how long each waited for a core: a process's
 * main thread can take no more than the loop's wall time, on a core or waiting for one, so its
 * share says whether it is what bounds the launch rate.
 */
function threadSection(report: Report, title: string, measured: { rows: ThreadRow[]; wallMs: number }, launches: number): void {
  const us = (value: number) => (Number.isFinite(value) ? `${Math.round((value * 1000) / launches)} µs` : '-');
  const share = (value: number) => `${Math.round((100 * value) / measured.wallMs)} %`;
  report.section(
    `${title}, by thread (the same closed loop: CPU a launch | waiting for a core a launch; a main thread's share of the loop's wall time)`,
    measured.rows.map((r) =>
      row(
        r.threads > 1 ? `${r.label} (${r.threads})` : r.label,
        `${us(r.cpuMs).padStart(7)} | ${us(r.waitMs).padStart(7)}${r.main ? `   on a core ${share(r.cpuMs)}, waiting for one ${Number.isFinite(r.waitMs) ? share(r.waitMs) : '-'}` : ''}`,
      ),
    ),
  );
}

export type PacedLaunchFigures = {
  count: number;
  answered: number;
  p50: number;
  p99: number;
  /** Launch (its due time) -> signed dispatch.completed, p99 over the accepted launches; a missing one counts as never. */
  e2eP99: number;
  /** Accepted launches whose webhook had arrived `withinMs` after the load ended. */
  deliveredWithin: number;
  delivered: number;
  accepted: number;
  cpuMsPerLaunch: number;
};

/**
 * Launches paced at `rate` for `durationMs` (an open loop), then the wait for their webhooks:
 * counted `withinMs` after the load ended, then awaited up to `webhookTimeoutMs` in all. CPU from
 * the first send to the last webhook (or the end of the wait), over the launches offered.
 */
export async function pacedLaunches(
  report: Report,
  title: string,
  system: System,
  route: Route,
  headers: Record<string, string>,
  pace: { rate: number; durationMs: number; maxSockets: number },
  withinMs: number,
  webhookTimeoutMs: number,
): Promise<PacedLaunchFigures> {
  progress(`${title}: launches paced at ${pace.rate}/s for ${pace.durationMs / 1000} s (at most ${pace.maxSockets} on the wire)`);
  const cpu = new CpuMeter(system.pids).start();
  const run = await pacedLoop(pace.rate, pace.durationMs, pace.maxSockets, `${system.base}/v1/campaigns`, headers, LAUNCH_BODY);
  const { ids } = acceptedOf(run);
  progress(`${title}: load done; waiting up to ${webhookTimeoutMs / 1000} s for ${ids.length} webhooks`);
  const delivered = await waitForCompletions(route, ids, webhookTimeoutMs);
  const used = cpu.stop();
  // Judged afterwards from the arrival times: a launch answered late has no webhook by then either.
  const countedWithin = ids.reduce((n, id) => n + ((route.completedAt.get(id) ?? Infinity) <= run.loadEndedAt + withinMs ? 1 : 0), 0);

  const { sent: accepted } = acceptedOf(run);
  const e2e = ascending(accepted.map((s) => (route.completedAt.get(s.body.data.id) ?? Infinity) - s.startedAt));
  const sorted = latencies(run.sent);
  const failures = failuresOf(run.sent);
  const figures: PacedLaunchFigures = {
    count: run.sent.length,
    answered: accepted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    e2eP99: percentile(e2e, 99),
    deliveredWithin: countedWithin,
    delivered,
    accepted: ids.length,
    cpuMsPerLaunch: used.cpuMs / run.sent.length,
  };
  report.section(`${title} (open loop: ${pace.rate} launches/s for ${pace.durationMs / 1000} s, latency from each launch's due time)`, [
    row('answered 200', `${accepted.length}/${run.sent.length}${failures.count + failures.shed > 0 ? `; ${failures.summary.join('; ')}` : ''}`),
    row('POST latency', dist(sorted)),
    row('launch -> signed dispatch.completed', `${dist(e2e)}  (${delivered}/${ids.length} delivered; a missing one counts as never)`),
    row(`webhooks within ${withinMs / 1000} s of the load's end`, `${countedWithin}/${ids.length}`),
    row(
      'CPU per launch',
      `${ms(figures.cpuMsPerLaunch)}   (${(used.cpuMs / 1000).toFixed(1)} s CPU over ${(used.wallMs / 1000).toFixed(1)} s, first send -> last webhook)`,
    ),
    row('client send lag', `p99 ${ms(run.sendLagP99Ms)}  max ${ms(run.sendLagMaxMs)}  (how late this client sent behind schedule)`),
  ]);
  if (delivered < ids.length) {
    report.problem(
      `${title}: only ${delivered}/${ids.length} signed dispatch.completed webhooks of answered launches arrived within ${webhookTimeoutMs / 1000} s after the load`,
    );
  }
  return figures;
}

/**
 * Many signed deliveries at once to one origin: `launches` launches of an account whose
 * `routes.length` endpoints (paths of the same origin) each take dispatch.accepted and
 * dispatch.completed. The rate is deliveries over first -> last arrival; TLS handshakes and TCP
 * connections are counted at the receiver over the same phase.
 */
export async function webhookBurst(
  report: Report,
  system: System,
  receiver: WebhookReceiver,
  routes: Route[],
  headers: Record<string, string>,
  launches: number,
  concurrency: number,
  timeoutMs: number,
) {
  const expected = launches * routes.length * 2;
  progress(`webhooks: ${launches} launches x ${routes.length} endpoints x 2 events = ${expected} deliveries to one origin`);
  const before = receiver.counters();
  const acceptedBefore = routes.reduce((n, r) => n + r.accepted.size, 0);
  const startedAt = performance.now();
  const run = await closedLoop(launches, concurrency, `${system.base}/v1/campaigns`, headers, LAUNCH_BODY);
  const postsDoneAt = performance.now();
  const count = () => routes.reduce((n, r) => n + r.accepted.size, 0) - acceptedBefore;
  const expectedAccepted = acceptedOf(run).ids.length * routes.length * 2;
  await waitUntil(() => count() >= expectedAccepted, timeoutMs);
  const arrivals = ascending(routes.flatMap((r) => [...r.accepted.values()].filter((t) => t >= startedAt)));
  const after = receiver.counters();
  const deliveries = arrivals.length;
  const spanMs = deliveries > 1 ? arrivals[deliveries - 1] - arrivals[0] : NaN;
  const perSecondRate = deliveries > 1 ? (deliveries - 1) / (spanMs / 1000) : 0;
  const requests = after.requests - before.requests;
  const handshakes = after.handshakes - before.handshakes;
  const connections = after.connections - before.connections;
  const failures = failuresOf(run.sent);
  report.section(`webhooks (${launches} launches at concurrency ${concurrency}, ${routes.length} endpoints of one origin, 2 events each)`, [
    row(
      'signed deliveries',
      `${deliveries}/${expectedAccepted} in ${ms(arrivals[deliveries - 1] - startedAt)} from the first POST (POSTs took ${ms(postsDoneAt - startedAt)})`,
    ),
    row('delivery rate', `${perSecond(perSecondRate)} deliveries/s   (first -> last arrival, ${ms(spanMs)})`),
    row(
      'connections at the receiver',
      `${handshakes} TLS handshakes, ${connections} TCP connections for ${requests} requests in this phase (connections kept from earlier phases need none)`,
    ),
  ]);
  if (failures.count > 0) report.problem(`webhooks: ${failures.count} of ${launches} launches did not answer 200:\n    ${failures.summary.join('\n    ')}`);
  if (deliveries < expectedAccepted) report.problem(`webhooks: only ${deliveries}/${expectedAccepted} signed deliveries arrived within ${timeoutMs / 1000} s`);
  return { deliveries, perSecond: perSecondRate, requests, handshakes };
}

/**
 * Fairness. Accounts A and B launch at the same pace, each with one endpoint. After a quiet
 * stretch (B's control latency), A's endpoint answers 503 after 500 ms for `outageMs`, while it
 * is sent `2 x rate x outage` events (dispatch.accepted and dispatch.completed); B's endpoint
 * stays healthy. Reported: B's launch -> signed dispatch.completed latency before and during the
 * outage, and whether A later receives every event, within `recoveryMs` after the outage.
 */
export async function fairness(
  report: Report,
  system: System,
  failing: Route,
  healthy: Route,
  headersA: Record<string, string>,
  headersB: Record<string, string>,
  opts: { rate: number; controlMs: number; outageMs: number; recoveryMs: number; maxSockets: number; webhookTimeoutMs: number },
) {
  const totalMs = opts.controlMs + opts.outageMs;
  progress(
    `fairness: accounts A and B at ${opts.rate} launches/s each for ${totalMs / 1000} s; A's endpoint answers 503 after 500 ms for the last ${opts.outageMs / 1000} s`,
  );
  const startedAt = performance.now();
  const outageStart = startedAt + opts.controlMs;
  const outageEnd = outageStart + opts.outageMs;
  const arm = setTimeout(() => (failing.failure = { until: outageEnd, delayMs: 500, status: 503 }), Math.max(0, opts.controlMs));
  let runA: RunResult;
  let runB: RunResult;
  try {
    [runA, runB] = await Promise.all([
      pacedLoop(opts.rate, totalMs, opts.maxSockets, `${system.base}/v1/campaigns`, headersA, LAUNCH_BODY),
      pacedLoop(opts.rate, totalMs, opts.maxSockets, `${system.base}/v1/campaigns`, headersB, LAUNCH_BODY),
    ]);
  } finally {
    clearTimeout(arm);
  }
  const a = acceptedOf(runA);
  const b = acceptedOf(runB);
  progress(`fairness: load done; waiting for B's webhooks and up to ${opts.recoveryMs / 1000} s after the outage for all of A's events`);
  const deliveredB = await waitForCompletions(healthy, b.ids, opts.webhookTimeoutMs);
  const expectedA = a.ids.flatMap((id) => [`${id} dispatch.accepted`, `${id} dispatch.completed`]);
  const receivedA = () => expectedA.reduce((n, k) => n + (failing.acceptedByDispatch.has(k) ? 1 : 0), 0);
  await waitUntil(() => receivedA() === expectedA.length, Math.max(0, outageEnd + opts.recoveryMs - performance.now()), 100);
  const allOfAAt = receivedA() === expectedA.length ? Math.max(...[...failing.accepted.values()]) : NaN;
  failing.failure = null;

  const latencyOf = (sent: Sent[]) => ascending(sent.map((s) => (healthy.completedAt.get(s.body.data.id) ?? Infinity) - s.startedAt));
  const bControl = latencyOf(b.sent.filter((s) => s.startedAt < outageStart));
  const bOutage = latencyOf(b.sent.filter((s) => s.startedAt >= outageStart));
  const eventsDuringOutage = failing.refusedEvents.size;
  const offeredDuringOutage = 2 * a.sent.filter((x) => x.startedAt >= outageStart).length;
  report.section(`fairness (A and B at ${opts.rate} launches/s each; A's endpoint answers 503 after 500 ms for ${opts.outageMs / 1000} s)`, [
    row('B: launch -> webhook, before', bControl.length > 0 ? dist(bControl) : '-'),
    row("B: launch -> webhook, during A's outage", bOutage.length > 0 ? `${dist(bOutage)}  (${deliveredB}/${b.ids.length} delivered in all)` : '-'),
    row(
      'A: events refused during the outage',
      `${eventsDuringOutage} distinct events (of ${offeredDuringOutage} launched for it meanwhile), ${failing.refused} requests refused`,
    ),
    row(
      'A: every event received later',
      `${receivedA()}/${expectedA.length}${Number.isFinite(allOfAAt) ? `, the last ${ms(allOfAAt - outageEnd)} after the outage ended` : ` after waiting ${opts.recoveryMs / 1000} s past the outage`}`,
    ),
    row('answered 200', `A ${a.ids.length}/${runA.sent.length}, B ${b.ids.length}/${runB.sent.length}`),
  ]);
  const failures = failuresOf([...runA.sent, ...runB.sent]);
  if (failures.count > 0) report.problem(`fairness: ${failures.count} launches did not answer 200:\n    ${failures.summary.join('\n    ')}`);
  if (deliveredB < b.ids.length)
    report.problem(`fairness: only ${deliveredB}/${b.ids.length} of the healthy endpoint's webhooks arrived within ${opts.webhookTimeoutMs / 1000} s`);
  return {
    bP99: percentile(bOutage, 99),
    bControlP99: percentile(bControl, 99),
    aReceived: receivedA(),
    aExpected: expectedA.length,
    eventsDuringOutage,
    offeredDuringOutage,
    afterOutageMs: allOfAAt - outageEnd,
  };
}

/** The idle figure, and what the system used while it settled before it. */
export type IdleFigures = { percent: number; cpuMs: number; wallMs: number; settling: { percent: number; wallMs: number } };

/**
 * CPU with nothing to do, once the system has settled: after a load V8 shrinks each heap it grew
 * (its memory reducer: a few full collections over the next 10 to 40 s, about 0.2 s of CPU per app
 * after the warm-up), which is the end of the load, not the cost of being idle. The settling
 * window is measured too and reported beside the figure.
 */
export async function idleCpu(system: System, durationMs: number, settleMs: number): Promise<IdleFigures> {
  progress(`idle: ${settleMs / 1000} s to settle, then CPU over ${durationMs / 1000} s with nothing to do`);
  const settle = new CpuMeter(system.pids).start();
  await sleep(settleMs);
  const settled = settle.stop();
  const cpu = new CpuMeter(system.pids).start();
  await sleep(durationMs);
  const used = cpu.stop();
  const percent = (measured: { cpuMs: number; wallMs: number }) => (100 * measured.cpuMs) / measured.wallMs;
  return { percent: percent(used), ...used, settling: { percent: percent(settled), wallMs: settled.wallMs } };
}
