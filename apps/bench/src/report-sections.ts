/** The bench report's goals and sections that both runs (standalone and --nats) print. */
import type { ExpressBaseline, FloorFigures, IdleFigures } from './phases';
import { ms, perSecond, Report, row, times } from './report';
import type { Settings } from './settings';
import type { RunningSystem } from './systems';
import type { WebhookReceiver } from './webhook-receiver';

const HEADROOM_GOAL = 10_000;

export function headroomGoal(report: Report, headroom: { perSecond: number }): void {
  report.goal({
    label: 'client headroom: bare node:http',
    figure: `${perSecond(headroom.perSecond)} req/s`,
    target: `≥ ${HEADROOM_GOAL}/s`,
    baseline: '(this is the client check)',
    met: headroom.perSecond >= HEADROOM_GOAL,
  });
  if (headroom.perSecond < HEADROOM_GOAL)
    report.notes.push(`the client drove bare node:http at only ${perSecond(headroom.perSecond)} req/s: the ratios below flatter the service`);
}

export function launchRateGoal(report: Report, label: string, launchesPerSecond: number, express: ExpressBaseline): void {
  const ratio = launchesPerSecond / express.perSecond;
  report.goal({
    label,
    figure: `${perSecond(launchesPerSecond)} launches/s`,
    target: '≥ 0.5×',
    baseline: `${perSecond(express.perSecond)} req/s bare Express`,
    ratio: times(ratio),
    met: ratio >= 0.5,
  });
}

/**
 * Judged beside the floor, the least a launch costs on this machine without a framework
 * (baseline-server.ts), measured the same way: in a closed loop, or at the same pace (`rate`).
 */
export function cpuGoal(report: Report, label: string, cpuMsPerLaunch: number, targetMs: number, floor: { cpuMsPerLaunch: number; rate?: number }): void {
  report.goal({
    label,
    figure: ms(cpuMsPerLaunch),
    target: `≤ ${targetMs} ms`,
    baseline: `${ms(floor.cpuMsPerLaunch)}/launch floor${floor.rate === undefined ? '' : ` at ${floor.rate}/s`}`,
    ratio: times(cpuMsPerLaunch / floor.cpuMsPerLaunch),
    met: cpuMsPerLaunch <= targetMs,
  });
}

export function expressSection(report: Report, express: ExpressBaseline, headroom: { perSecond: number }, floor: FloorFigures, s: Settings): void {
  report.section('baselines (same client, same machine, each server in its own process)', [
    row('bare node:http (client headroom)', `${perSecond(headroom.perSecond)} req/s   (${s.headroomRequests} requests at concurrency ${s.concurrency})`),
    row(
      'floor: a launch without a framework',
      `${perSecond(floor.perSecond)} launches/s   CPU ${ms(floor.cpuMsPerLaunch)}/launch, POST to signed webhook  (node:http, 3 durable writes to SQLite, 1 signed HTTPS POST; ${s.launches} launches after ${s.warmupLaunches})`,
    ),
    row(
      `floor, paced ${floor.gentle.rate}/s`,
      `CPU ${ms(floor.gentle.cpuMsPerLaunch)}/launch   (open loop for ${s.gentleMs / 1000} s: the gentle goal's baseline)`,
    ),
    row(
      'bare Express, closed loop',
      `${perSecond(express.perSecond)} req/s   p50 ${ms(express.p50)}  p99 ${ms(express.p99)}  CPU ${ms(express.cpuMsPerRequest)}/request  (${s.baselineRequests} requests)`,
    ),
    ...(express.paced
      ? [
          row(
            `bare Express, paced ${s.pacedRate}/s`,
            `${express.paced.answered}/${express.paced.count} answered 200  p50 ${ms(express.paced.p50)}  p99 ${ms(express.paced.p99)}  CPU ${ms(express.paced.cpuMsPerRequest)}/request  (client send lag p99 ${ms(express.paced.sendLagP99Ms)})`,
          ),
        ]
      : []),
  ]);
}

/**
 * Over the whole run (the sender may keep connections from one phase to the next): every request
 * the service made to the receiver's one origin, per TLS handshake it needed.
 */
export function connectionsSection(report: Report, receiver: WebhookReceiver, afterRaw: ReturnType<WebhookReceiver['counters']>) {
  const requests = receiver.requests - afterRaw.requests;
  const handshakes = receiver.handshakes - afterRaw.handshakes;
  const perHandshake = handshakes > 0 ? requests / handshakes : Infinity;
  report.section('connections to the receiver over the whole run (one origin, every phase)', [
    row('requests from the service', `${requests}`),
    row(
      'TLS handshakes, TCP connections',
      `${handshakes}, ${receiver.connections - afterRaw.connections}  (${Number.isFinite(perHandshake) ? perHandshake.toFixed(1) : '∞'} requests per handshake)`,
    ),
  ]);
  return { handshakes, perHandshake };
}

export function logNotes(report: Report, system: RunningSystem): void {
  for (const { app, lines, tail } of system.logged()) {
    // The fairness phase's failing endpoint makes one warning per refused delivery: expected.
    const unexpected = tail.filter((line) => !line.includes('failed (http_503)')).slice(-3);
    if (lines > 0)
      report.notes.push(
        `${app} logged ${lines} line(s) at LOG_LEVEL=warn during the run (a failed delivery is one)` +
          (unexpected.length > 0 ? `; the last besides the 503s:\n      ${unexpected.join('\n      ')}` : ''),
      );
  }
}

/** Goal 6's idle CPU: below 2 % of a core, once settled (idleCpu). */
export function idleGoal(report: Report, label: string, idle: IdleFigures): void {
  report.goal({
    label,
    figure: `${idle.percent.toFixed(2)}% of a core`,
    target: '< 2%',
    baseline: `over ${(idle.wallMs / 1000).toFixed(0)} s, settled`,
    met: Number(idle.percent.toFixed(2)) < 2,
  });
}

/** The idle section's line: the figure, then the settling before it. */
export const idleLine = (idle: IdleFigures): string =>
  `${idle.percent.toFixed(2)}% of one core (${ms(idle.cpuMs)} CPU over ${(idle.wallMs / 1000).toFixed(1)} s), after ${(idle.settling.wallMs / 1000).toFixed(0)} s settling at ${idle.settling.percent.toFixed(2)}% (V8 shrinking the heaps the load grew)`;
