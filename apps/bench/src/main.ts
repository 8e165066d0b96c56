/**
 * `npm run bench`: the performance goals (docs/benchmarks.md), each measured beside a baseline taken in the same run on the
 * same machine, so the numbers mean something on whatever machine runs them. The default run
 * measures the standalone process; `npm run bench -- --nats` the four apps over a nats-server the
 * bench starts. A goal not met does not fail the run; a wrong answer, a bad signature or a missing
 * webhook does (exit 1).
 *
 * Both runs: the client's headroom (bare node:http), then the bare Express baseline (closed loop,
 * and in the default run the same paced load as the service gets).
 * Default run, against the standalone process:
 *   closed loop     BENCH_LAUNCHES launches at BENCH_CONCURRENCY, every signed webhook awaited
 *   paced           BENCH_PACED_RATE launches/s for BENCH_PACED_SECONDS (open loop)
 *   webhooks        BENCH_WEBHOOK_LAUNCHES launches of an account with BENCH_WEBHOOK_ENDPOINTS
 *                   endpoints on one https origin, each taking dispatch.accepted and .completed
 *   fairness        accounts A and B at BENCH_FAIRNESS_RATE launches/s each; A's endpoint answers
 *                   503 after 500 ms for BENCH_FAIRNESS_OUTAGE_S
 *   gentle          BENCH_GENTLE_RATE launches/s for BENCH_GENTLE_SECONDS: CPU per launch, as with --nats
 *   memory          the process's peak RSS (VmHWM) over all of the above; idle CPU at the end
 *   overload        a standalone process of its own with DISPATCH_BACKLOG_SECONDS=BENCH_OVERLOAD_BOUND_S, sent
 *                   BENCH_OVERLOAD_RATE launches/s for BENCH_OVERLOAD_SECONDS: only 200 or 503, every accepted one completes
 * --nats, against nats-server + api-gateway + dispatch-, connection- and webhook-delivery-service:
 *   the closed loop, paced at BENCH_GENTLE_RATE (CPU per launch) and at BENCH_NATS_PACED_RATE (every
 *   launch answered, every webhook within 5 s of the load's end), then idle CPU of the tree, as the
 *   default run orders them: the closed loop measures a tree at full load, not its first seconds
 *   after a lull (which cost a launch more: docs/benchmarks.md)
 *
 *   BENCH_WARMUP_LAUNCHES      launches before anything is measured, every webhook awaited (default 5000), the service's
 *                              and the floor's alike: what a service that has run a while costs, not its JIT's first
 *                              compiles (the warm-up's own CPU per launch is printed)
 *   BENCH_LAUNCHES             closed-loop launches (default 2000)
 *   BENCH_CONCURRENCY          requests in flight in closed loops, baseline and service alike (default 32)
 *   BENCH_BASELINE_REQUESTS    measured Express baseline requests (default 10000)
 *   BENCH_HEADROOM_REQUESTS    measured bare node:http requests (default 30000)
 *   BENCH_PACED_RATE           launches/s of the paced run (default 500)
 *   BENCH_PACED_SECONDS        its length (default 10)
 *   BENCH_PACED_MAX_SOCKETS    connections a paced client may open; more requests wait, their clock running (default 256)
 *   BENCH_WEBHOOK_ENDPOINTS    endpoints of the webhooks phase, at most 50 (default 20)
 *   BENCH_WEBHOOK_LAUNCHES     launches of the webhooks phase (default 100: 4000 deliveries)
 *   BENCH_FAIRNESS_RATE        launches/s of each of A and B (default 10: A gets 400 events in the outage)
 *   BENCH_FAIRNESS_CONTROL_S   before the outage, for B's latency with A healthy (default 5)
 *   BENCH_FAIRNESS_OUTAGE_S    how long A's endpoint fails (default 20)
 *   BENCH_FAIRNESS_RECOVERY_S  how long after the outage A may take to get every event (default 45)
 *   BENCH_IDLE_S               idle CPU measurement (default 10: /proc counts CPU in 10 ms ticks a process)
 *   BENCH_IDLE_SETTLE_S        before it, how long the system settles after the load (default 60: V8 shrinks the heaps the load grew)
 *   BENCH_NATS_LAUNCHES        closed-loop launches with --nats (default BENCH_LAUNCHES)
 *   BENCH_GENTLE_RATE          the gentle pace for CPU per launch (default 40)
 *   BENCH_GENTLE_SECONDS       its length (default 10)
 *   BENCH_NATS_PACED_RATE      --nats: the pace whose every webhook is due within 5 s (default 200)
 *   BENCH_NATS_PACED_SECONDS   --nats: its length (default 10)
 *   BENCH_OVERLOAD_RATE        launches/s of the overload burst (default 2000)
 *   BENCH_OVERLOAD_SECONDS     its length (default 3)
 *   BENCH_OVERLOAD_BOUND_S     DISPATCH_BACKLOG_SECONDS of its process (default 2)
 *   BENCH_WEBHOOK_TIMEOUT_S    how long to wait for the last webhook of a phase (default 120)
 *   BENCH_DEADLINE_S           the whole run, after which everything is stopped and it fails (default 900)
 *   BENCH_STAGE_LAUNCHES       launches of the stage table's run (default 2000): the measured phases run on a process
 *                              without V8's profiler, which costs CPU of its own; the table (CPU per launch by
 *                              stage, stage-table.ts) comes from a profiled twin of the system, started after them
 *   BENCH_CPU_PROF             a directory to keep that run's V8 CPU profiles in (one per thread, written when the
 *                              process stops; summarize one with `node scripts/cpu-profile-summary.js FILE`)
 *   BENCH_OPS                  0 skips ops export/rebuild throughput on 100k and 1M-event embedded stores (ops-throughput.ts)
 *
 * Only 127.0.0.1 is used. The clients, the https webhook receiver (with a CA made for the run,
 * trusted by the service through NODE_EXTRA_CA_CERTS) and the timing live in this process; the
 * baseline servers and the service's processes each run in a child process, as in production.
 * CPU and memory are read from /proc (Linux).
 */
import { availableParallelism, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { createTestCertificates } from '@campaign-ops/testing/webhook-sender';
import { BenchFailure, launchesAwaited, openAccount, progress, waitQuiet } from './common';
import { closedLaunches, fairness, idleCpu, measureExpress, measureFloor, measureHeadroom, measureReceiverRaw, pacedLaunches, webhookBurst } from './phases';
import { cleanup, makeTempDir } from './processes';
import { CpuMeter, memoryMb, procAvailable, RssSampler } from './proc-stats';
import { ms, perSecond, Report, row, times } from './report';
import { RunningSystem, startFourApps, startStandalone } from './systems';
import { WebhookReceiver } from './webhook-receiver';
import { measureOpsThroughputAsTheCliRuns } from './ops-throughput';
import { overloadBurst } from './overload';
import { stageRun } from './stage-run';
import { connectionsSection, cpuGoal, expressSection, headroomGoal, idleGoal, idleLine, launchRateGoal, logNotes } from './report-sections';
import { settings, Settings } from './settings';

const ROOT = resolve(__dirname, '../../../..'); // dist/apps/bench/src -> repository root
/**
 * Retries for the bench: short, so a failing endpoint's events come through within the run, yet
 * 39 s in all, so an event first refused at the outage's start still has tries after it ends.
 */
const RETRY_SCHEDULE = '1s,2s,4s,8s,8s,8s,8s';

/** The receiver's URL, its CA (for NODE_EXTRA_CA_CERTS), the raw keep-alive baseline and the floor. */
async function startReceiver(s: Settings, headers: Record<string, string>) {
  const certificates = await createTestCertificates(makeTempDir('campaign-ops-bench-tls-'));
  const receiver = await WebhookReceiver.start({ key: certificates.key, cert: certificates.cert });
  const raw = await measureReceiverRaw(receiver, certificates.caCert, 5000, s.concurrency);
  const floor = await measureFloor(
    ROOT,
    receiver,
    certificates.caCertPath,
    {
      warmup: s.warmupLaunches,
      launches: s.launches,
      concurrency: s.concurrency,
      gentle: { rate: s.gentleRate, durationMs: s.gentleMs, maxSockets: s.maxSockets },
    },
    headers,
  );
  // From here on every request and handshake at the receiver is the service's.
  return { receiver, caCertPath: certificates.caCertPath, raw, floor, afterRaw: receiver.counters() };
}

/**
 * Warm-up launches, their webhooks awaited, so a measured run starts with nothing in flight and on
 * code V8 has compiled: a service runs for days, and its first few thousand launches also pay for
 * compiling the path they take. What the warm-up cost a launch is shown in its own section.
 */
async function warmUp(report: Report, system: RunningSystem, receiver: WebhookReceiver, headers: Record<string, string>, s: Settings): Promise<void> {
  const launches = s.warmupLaunches;
  progress(`service: ${launches} warm-up launches`);
  const cpu = new CpuMeter(system.pids).start();
  const { run, ids } = await launchesAwaited('the warm-up', system.base, headers, receiver.route('main'), {
    launches,
    concurrency: s.concurrency,
    timeoutMs: s.webhookTimeoutMs,
  });
  if (ids.length < launches)
    throw new BenchFailure(`only ${ids.length} of ${launches} warm-up launches answered 200: ${run.sent.find((x) => x.status !== 200)?.error ?? ''}`);
  const used = cpu.stop();
  report.section(`warm-up (closed loop: ${launches} launches, ${s.concurrency} in flight, before anything is measured)`, [
    row('launches', `${perSecond(launches / (run.wallMs / 1000))} launches/s`),
    row('CPU per launch', `${ms(used.cpuMs / launches)}   (V8 compiling the hot path included; the measured phases come after)`),
  ]);
}

/** Between phases: whatever an earlier phase left (launches the client gave up on) is worked off first. */
async function drain(receiver: WebhookReceiver, s: Settings): Promise<void> {
  if (!(await waitQuiet(receiver, 2_000, s.webhookTimeoutMs)))
    progress(`the receiver was still getting webhooks after ${s.webhookTimeoutMs / 1000} s; going on`);
}

async function runStandalone(report: Report, s: Settings, baselineHeaders: Record<string, string>): Promise<void> {
  const headroom = await measureHeadroom(ROOT, s.headroomRequests, s.concurrency, baselineHeaders);
  const express = await measureExpress(ROOT, s.concurrency, s.baselineRequests, baselineHeaders, {
    rate: s.pacedRate,
    durationMs: s.pacedMs,
    maxSockets: s.maxSockets,
  });
  const { receiver, caCertPath, raw, floor, afterRaw } = await startReceiver(s, baselineHeaders);
  progress('service: starting the standalone process');
  const system = await startStandalone(ROOT, caCertPath, RETRY_SCHEDULE);
  const rss = procAvailable() ? new RssSampler(system.mainPid) : null;
  try {
    const main = await openAccount(system.base, receiver, 'bench', [{ route: 'main', events: ['dispatch.completed'] }]);
    const burstRoutes = Array.from({ length: s.webhookEndpoints }, (_, i) => `burst-${i + 1}`);
    const burst = await openAccount(
      system.base,
      receiver,
      'bench-webhooks',
      burstRoutes.map((route) => ({ route, events: ['dispatch.accepted', 'dispatch.completed'] })),
    );
    const accountA = await openAccount(system.base, receiver, 'bench-failing', [{ route: 'failing', events: ['dispatch.accepted', 'dispatch.completed'] }]);
    const accountB = await openAccount(system.base, receiver, 'bench-healthy', [{ route: 'healthy', events: ['dispatch.completed'] }]);
    system.markReady();
    await warmUp(report, system, receiver, main, s);

    rss?.setPhase('closed loop');
    const closed = await closedLaunches(report, 'standalone', system, receiver.route('main'), main, s.launches, s.concurrency, s.webhookTimeoutMs);
    rss?.setPhase('paced');
    const paced = await pacedLaunches(
      report,
      'standalone, paced',
      system,
      receiver.route('main'),
      main,
      { rate: s.pacedRate, durationMs: s.pacedMs, maxSockets: s.maxSockets },
      5_000,
      s.webhookTimeoutMs,
    );
    await drain(receiver, s);
    rss?.setPhase('webhooks');
    const hooks = await webhookBurst(
      report,
      system,
      receiver,
      burstRoutes.map((r) => receiver.route(r)),
      burst,
      s.webhookLaunches,
      s.concurrency,
      s.webhookTimeoutMs,
    );
    await drain(receiver, s);
    rss?.setPhase('fairness');
    const fair = await fairness(report, system, receiver.route('failing'), receiver.route('healthy'), accountA, accountB, {
      rate: s.fairnessRate,
      controlMs: s.fairnessControlMs,
      outageMs: s.fairnessOutageMs,
      recoveryMs: s.fairnessRecoveryMs,
      maxSockets: s.maxSockets,
      webhookTimeoutMs: s.webhookTimeoutMs,
    });
    await drain(receiver, s);
    rss?.setPhase('gentle');
    const gentle = await pacedLaunches(
      report,
      'standalone, paced gently',
      system,
      receiver.route('main'),
      main,
      { rate: s.gentleRate, durationMs: s.gentleMs, maxSockets: s.maxSockets },
      5_000,
      s.webhookTimeoutMs,
    );
    await drain(receiver, s);
    rss?.setPhase('idle');
    const idle = procAvailable() ? await idleCpu(system, s.idleMs, s.idleSettleMs) : null;
    rss?.stop();
    const peakMb = procAvailable() ? memoryMb(system.mainPid, 'VmHWM') : null;

    // ---- the goals ----
    headroomGoal(report, headroom);
    launchRateGoal(report, '1 launches/s through the gateway', closed.launchesPerSecond, express);
    report.goal({
      label: `1 closed loop C=${s.concurrency}: launch -> webhook p50`,
      figure: ms(closed.e2eP50),
      target: '≤ 1000 ms',
      baseline: 'the pipeline keeps pace with the gateway',
      met: closed.e2eP50 <= 1000,
    });
    const p = `2 paced ${s.pacedRate}/s ${s.pacedMs / 1000} s:`;
    const ep = express.paced!;
    report.goal({
      label: `${p} answered 200`,
      figure: `${paced.answered}/${paced.count}`,
      target: 'all',
      baseline: `${ep.answered}/${ep.count} bare Express`,
      met: paced.answered === paced.count,
    });
    report.goal({
      label: `${p} POST p50`,
      figure: ms(paced.p50),
      target: '≤ 20 ms',
      baseline: `${ms(ep.p50)} bare Express`,
      ratio: times(paced.p50 / ep.p50),
      met: paced.p50 <= 20,
    });
    report.goal({
      label: `${p} POST p99`,
      figure: ms(paced.p99),
      target: '≤ 100 ms',
      baseline: `${ms(ep.p99)} bare Express`,
      ratio: times(paced.p99 / ep.p99),
      met: paced.p99 <= 100,
    });
    report.goal({ label: `${p} launch -> webhook p99`, figure: ms(paced.e2eP99), target: '≤ 1000 ms', met: paced.e2eP99 <= 1000 });
    report.goal({
      label: '3 webhooks: signed deliveries/s',
      figure: `${perSecond(hooks.perSecond)}/s`,
      target: '≥ 2000/s',
      baseline: `${perSecond(raw.perSecond)}/s receiver, keep-alive`,
      ratio: times(hooks.perSecond / raw.perSecond),
      met: hooks.perSecond >= 2000,
    });
    const { handshakes, perHandshake } = connectionsSection(report, receiver, afterRaw);
    report.goal({
      label: '3 webhooks: requests per TLS handshake',
      figure: `${Number.isFinite(perHandshake) ? perHandshake.toFixed(1) : '∞'} (${handshakes} hs)`,
      target: '≥ 50',
      baseline: `${(5000 / Math.max(1, raw.handshakes)).toFixed(0)} keep-alive client`,
      met: perHandshake >= 50,
    });
    report.goal({
      label: '4 fairness: healthy endpoint p99',
      figure: ms(fair.bP99),
      target: '≤ 2× before',
      baseline: `${ms(fair.bControlP99)} before the outage`,
      ratio: times(fair.bP99 / fair.bControlP99),
      met: fair.bP99 <= 2 * fair.bControlP99,
    });
    report.goal({
      label: '4 fairness: failing endpoint gets all',
      figure: `${fair.aReceived}/${fair.aExpected}${Number.isFinite(fair.afterOutageMs) ? ` +${(fair.afterOutageMs / 1000).toFixed(1)} s` : ''}`,
      target: `all ≤ ${s.fairnessRecoveryMs / 1000} s`,
      baseline: `${fair.eventsDuringOutage}/${fair.offeredDuringOutage} refused in outage`,
      met: fair.aReceived === fair.aExpected,
    });
    if (peakMb === null) report.notMeasured('5 peak RSS of the standalone process', '≤ 250 MB', 'no /proc here');
    else
      report.goal({
        label: '5 peak RSS of the standalone process',
        figure: `${peakMb.toFixed(0)} MB`,
        target: '≤ 250 MB',
        baseline: 'VmHWM over the whole run',
        met: peakMb <= 250,
      });
    cpuGoal(report, '6 CPU/launch, full load (standalone)', closed.cpuMsPerLaunch, 1, floor);
    cpuGoal(report, `6 CPU/launch, paced ${s.gentleRate}/s (standalone)`, gentle.cpuMsPerLaunch, 2, floor.gentle);
    if (idle) idleGoal(report, '6 idle CPU (standalone)', idle);
    report.notes.push(
      'the goals of the four apps over NATS (CPU per launch of the whole tree, idle CPU, paced 200/s) are measured by `npm run bench -- --nats`',
    );

    expressSection(report, express, headroom, floor, s);
    if (rss)
      report.section(
        'memory of the standalone process (VmRSS sampled every 200 ms; VmHWM is the peak)',
        [...rss.peakByPhase]
          .map(([phase, mb]) => row(phase, `${mb.toFixed(0)} MB`))
          .concat(row('VmHWM at the end', peakMb === null ? '-' : `${peakMb.toFixed(0)} MB`)),
      );
    if (idle) report.section('idle', [row('standalone process', idleLine(idle))]);
    if (receiver.badSignatures > 0) report.problem(`${receiver.badSignatures} webhook(s) arrived with a bad X-SERVICE-Signature`);
    if (receiver.malformed > 0) report.notes.push(`${receiver.malformed} webhook requests were too large, not JSON, or to no endpoint`);
    logNotes(report, system);
  } catch (error) {
    await receiver.close();
    throw error;
  } finally {
    rss?.stop();
    await system.stop();
  }
  try {
    await stageRun(report, 'standalone', (options) => startStandalone(ROOT, caCertPath, RETRY_SCHEDULE, options), receiver, stageSettings(s, 1000));
    await overloadBurst(report, ROOT, receiver, caCertPath, RETRY_SCHEDULE, {
      rate: s.overloadRate,
      durationMs: s.overloadMs,
      maxSockets: s.maxSockets,
      boundSeconds: s.overloadBoundSeconds,
      webhookTimeoutMs: s.webhookTimeoutMs,
    });
  } finally {
    await receiver.close();
  }
}

async function runNats(report: Report, s: Settings, baselineHeaders: Record<string, string>): Promise<void> {
  const headroom = await measureHeadroom(ROOT, s.headroomRequests, s.concurrency, baselineHeaders);
  const express = await measureExpress(ROOT, s.concurrency, s.baselineRequests, baselineHeaders, null);
  const { receiver, caCertPath, floor, afterRaw } = await startReceiver(s, baselineHeaders);
  progress('four apps: starting nats-server, connection-, dispatch-, webhook-delivery-service and api-gateway');
  const system = await startFourApps(ROOT, caCertPath, RETRY_SCHEDULE);
  try {
    const main = await openAccount(system.base, receiver, 'bench', [{ route: 'main', events: ['dispatch.completed'] }]);
    system.markReady();
    await warmUp(report, system, receiver, main, s);
    await drain(receiver, s);
    const closed = await closedLaunches(report, 'four apps over NATS', system, receiver.route('main'), main, s.natsLaunches, s.concurrency, s.webhookTimeoutMs);
    await drain(receiver, s);
    const gentle = await pacedLaunches(
      report,
      `four apps over NATS, paced gently`,
      system,
      receiver.route('main'),
      main,
      { rate: s.gentleRate, durationMs: s.gentleMs, maxSockets: s.maxSockets },
      5_000,
      s.webhookTimeoutMs,
    );
    await drain(receiver, s);
    const paced = await pacedLaunches(
      report,
      `four apps over NATS, paced`,
      system,
      receiver.route('main'),
      main,
      { rate: s.natsPacedRate, durationMs: s.natsPacedMs, maxSockets: s.maxSockets },
      5_000,
      s.webhookTimeoutMs,
    );
    await drain(receiver, s);
    const idle = await idleCpu(system, s.idleMs, s.idleSettleMs);

    // Each process's own peak, summed: at least the tree's peak (the peaks need not coincide).
    const peaks = procAvailable() ? system.pids().map((pid) => memoryMb(pid, 'VmHWM')) : [];
    const treePeakMb = peaks.length > 0 && peaks.every((mb) => mb !== null) ? peaks.reduce((sum: number, mb) => sum + mb!, 0) : null;
    headroomGoal(report, headroom);
    launchRateGoal(report, '1 launches/s through the gateway (NATS)', closed.launchesPerSecond, express);
    cpuGoal(report, '6 CPU/launch, full load (whole tree)', closed.cpuMsPerLaunch, 2, floor);
    cpuGoal(report, `6 CPU/launch, paced ${s.gentleRate}/s (whole tree)`, gentle.cpuMsPerLaunch, 2, floor.gentle);
    idleGoal(report, '6 idle CPU (whole tree)', idle);
    report.goal({
      label: '6 peak RSS of the tree (4 apps + nats-server)',
      figure: treePeakMb === null ? 'not measured' : `${treePeakMb.toFixed(0)} MB`,
      target: '≤ 600 MB',
      baseline: "each process's VmHWM, summed",
      met: treePeakMb === null ? null : treePeakMb <= 600,
    });
    report.goal({
      label: `6 paced ${s.natsPacedRate}/s: answered 200`,
      figure: `${paced.answered}/${paced.count}`,
      target: 'all',
      met: paced.answered === paced.count,
    });
    report.goal({
      label: `6 paced ${s.natsPacedRate}/s: launch -> webhook p99`,
      figure: ms(paced.e2eP99),
      target: '≤ 1000 ms',
      met: paced.delivered === paced.count && paced.e2eP99 <= 1000,
    });
    report.goal({
      label: `6 paced ${s.natsPacedRate}/s: webhooks ≤ 5 s after`,
      figure: `${paced.deliveredWithin}/${paced.count}`,
      target: 'all',
      baseline: `${paced.delivered}/${paced.accepted} after ${s.webhookTimeoutMs / 1000} s`,
      met: paced.deliveredWithin === paced.count,
    });
    expressSection(report, express, headroom, floor, s);
    connectionsSection(report, receiver, afterRaw);
    report.section('idle', [row('whole tree (4 apps + nats-server), after the paced phases', idleLine(idle))]);
    if (receiver.badSignatures > 0) report.problem(`${receiver.badSignatures} webhook(s) arrived with a bad X-SERVICE-Signature`);
    if (receiver.malformed > 0) report.notes.push(`${receiver.malformed} webhook requests were too large, not JSON, or to no endpoint`);
    logNotes(report, system);
  } finally {
    await system.stop();
  }
  try {
    await stageRun(
      report,
      'the four apps, whole tree less nats-server',
      (options) => startFourApps(ROOT, caCertPath, RETRY_SCHEDULE, options),
      receiver,
      stageSettings(s, 2000),
    );
  } finally {
    await receiver.close();
  }
}

const stageSettings = (s: Settings, goalMicros: number) => ({
  goalMicros,
  warmup: s.warmupLaunches,
  launches: s.stageLaunches,
  concurrency: s.concurrency,
  webhookTimeoutMs: s.webhookTimeoutMs,
});

async function main(): Promise<number> {
  const nats = process.argv.includes('--nats');
  const unknown = process.argv.slice(2).filter((a) => a !== '--nats');
  if (unknown.length > 0) throw new BenchFailure(`unknown argument(s) ${unknown.join(' ')}; the only one is --nats`);
  // Shown in the header: a busy machine (another build, a test run) skews every number below.
  const loadAtStart = loadavg()[0];
  const s = settings();
  if (!procAvailable()) progress('no /proc: CPU and memory are not measured');

  // The outer bound on everything: whatever hangs, the run ends, and the children with it.
  setTimeout(() => {
    process.stderr.write(`\nbench: FAILED: did not finish within BENCH_DEADLINE_S (${s.deadlineMs / 1000} s); stopping.\n`);
    void cleanup().finally(() => process.exit(1));
  }, s.deadlineMs).unref();

  // The same headers as a launch (with a key of the same shape) so every server reads the same bytes.
  const baselineHeaders = { 'Content-Type': 'application/json', Authorization: `Bearer mk_test_${'x'.repeat(40)}` };
  const report = new Report();
  const startedAt = Date.now();
  if (nats) await runNats(report, s, baselineHeaders);
  else await runStandalone(report, s, baselineHeaders);

  const header =
    `campaign-ops benchmark, ${nats ? 'the four apps over NATS (--nats)' : 'the standalone process'} ` +
    `(node ${process.version}, ${availableParallelism()} cores, load avg ${loadAtStart.toFixed(2)} at start, ${((Date.now() - startedAt) / 1000).toFixed(0)} s)`;
  process.stdout.write(report.render(header));
  if (process.env.BENCH_OPS !== '0') {
    process.stdout.write('\nops export and rebuild on the embedded stores (BENCH_OPS=0 skips):\n');
    await measureOpsThroughputAsTheCliRuns((line) => process.stdout.write(`${line}\n`));
  }
  if (report.problems.length > 0) {
    process.stdout.write(`\nbench: FAILED:\n  - ${report.problems.join('\n  - ')}\n`);
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
