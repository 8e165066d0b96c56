/**
 * Where a launch's CPU goes, by stage of the pipeline, from the V8 CPU profiles of the service's
 * processes (`--cpu-prof`, which the bench turns on: see processes.ts). Each sample is given to the
 * stage of the nearest frame of ours, walking from the sampled function towards the root, that
 * belongs to a stage: SQLite, JSON, NestJS and the like are charged to the stage that called them.
 * A sample with no such frame is the garbage collector's, node's own (timers, sockets, module
 * loading), or `other`. Idle samples are left out. A window (microseconds on the monotonic clock
 * V8's profiler and `process.hrtime` share) keeps only the samples taken within it: the stage run
 * counts its measured launches, not the warm-up before them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Report, row } from './report';

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
  /** When the profile started, µs on the monotonic clock (`process.hrtime.bigint() / 1000n`). */
  startTime?: number;
}

/** From and to, µs on the monotonic clock (`process.hrtime.bigint() / 1000n` in any process of the machine). */
export type SampleWindow = { from: number; to: number };

/** Now on the clock of a SampleWindow. */
export const monotonicMicros = (): number => Number(process.hrtime.bigint() / 1000n);

/** The stages, in the order a launch crosses them, each with the code that is its own. */
export const STAGES: ReadonlyArray<{ stage: string; code: RegExp }> = [
  { stage: 'start-up (loading code)', code: /^node:internal\/modules\// },
  {
    stage: 'gateway (HTTP, auth, validation, idempotency)',
    code: /\/libs\/(gateway|api-contract|api-errors|rate-limit)\/|node_modules\/(express|router|body-parser|class-validator|class-transformer|@nestjs\/platform-express)\/|^node:_http_(server|incoming|common)$/,
  },
  {
    stage: 'command + ledger (charge, dispatch made)',
    code: /\/libs\/(dispatching\/src\/(dispatch-commands|credit-ledgers|charged-dispatches|dispatch-idempotency|credit-handlers|dispatch-backlog|campaign-checks)|accounts)\b/,
  },
  { stage: 'relay (event store -> bus)', code: /\/libs\/dispatching\/src\/dispatch-relay|\/libs\/service-runtime\/src\/(event-relay|relay)/ },
  { stage: 'executor (the try, its outcome)', code: /\/libs\/(dispatching\/src\/(dispatch-executor|live-launches|dispatch-execution)|channels|ad-networks)\b/ },
  {
    stage: 'projections (read models)',
    code: /\/libs\/(event-sourcing\/src\/projection|dispatching\/src\/dispatch-(store|processors)|connections|webhook-delivery\/src\/endpoint-store)/,
  },
  { stage: 'fan-out (deliveries made)', code: /\/libs\/webhook-delivery\/src\/(fan-out|partner-events)/ },
  {
    stage: 'signing + send (webhooks)',
    code: /\/libs\/(webhook-delivery\/src\/(delivery-|endpoint-health)|webhook-sender|webhook-signing)|node_modules\/undici\//,
  },
  // Commits run from a timer of their own (group commit), with no stage's frame above them.
  { stage: 'commits (SQLite group commits, every store)', code: /\/libs\/sqlite-wal\// },
  {
    stage: 'acks + checkpoints (bus, processors)',
    code: /\/libs\/(bus|bus-transport|service-runtime\/src\/(checkpoint|checkpointed-processor|processor-lease))/,
  },
];

const GC = '(garbage collector)';
const IDLE = '(idle)';

/** Self time by stage (microseconds), plus `garbage collector`, `node internals` and `other`; idle left out. */
export function cpuByStage(profile: CpuProfile, window?: SampleWindow): Map<string, number> {
  const parent = new Map<number, number>();
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const stageOfNode = new Map<number, string>();
  const stageOf = (id: number): string => {
    const known = stageOfNode.get(id);
    if (known !== undefined) return known;
    const { functionName, url } = nodes.get(id)!.callFrame;
    const own = STAGES.find(({ code }) => code.test(url))?.stage;
    const up = parent.get(id);
    let stage: string;
    if (own) stage = own;
    else if (functionName === GC) stage = 'garbage collector';
    else if (up !== undefined && nodes.get(up)!.callFrame.functionName !== '(root)') stage = stageOf(up);
    else stage = url.startsWith('node:') ? 'node internals' : 'other';
    stageOfNode.set(id, stage);
    return stage;
  };
  const byStage = new Map<string, number>();
  // A sample's time is the profile's start plus the deltas up to and including its own.
  let at = profile.startTime ?? 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (window && (at < window.from || at > window.to)) return;
    if (nodes.get(id)?.callFrame.functionName === IDLE) return;
    const stage = stageOf(id);
    byStage.set(stage, (byStage.get(stage) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return byStage;
}

/** Every profile in `dir` (one per process), stage by stage, summed. */
export function cpuByStageIn(dir: string, window?: SampleWindow): Map<string, number> {
  const total = new Map<string, number>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    for (const [stage, micros] of cpuByStage(profile, window)) total.set(stage, (total.get(stage) ?? 0) + micros);
  }
  return total;
}

const START_UP = STAGES[0].stage;

/**
 * The table's lines: each stage's CPU per launch (µs) and share, in the pipeline's order, then the
 * rest and the total. Loading code happens once, not per launch: it is shown in ms, outside the total.
 */
export function stageLines(byStage: Map<string, number>, launches: number): Array<[string, string]> {
  const all = [...byStage].reduce((sum, [stage, micros]) => (stage === START_UP ? sum : sum + micros), 0);
  const order = [...STAGES.slice(1).map(({ stage }) => stage), 'garbage collector', 'node internals', 'other'];
  const line = (stage: string, micros: number): [string, string] => [
    stage,
    `${Math.round(micros / launches)
      .toString()
      .padStart(6)} µs a launch  ${((100 * micros) / (all || 1)).toFixed(1).padStart(5)} %`,
  ];
  const startUp = byStage.get(START_UP);
  return [
    ...(startUp === undefined ? [] : [[START_UP, `${Math.round(startUp / 1000)} ms once, not in the total`] as [string, string]]),
    ...order.filter((stage) => byStage.has(stage)).map((stage) => line(stage, byStage.get(stage)!)),
    line('all (sampled, idle left out)', all),
  ];
}

/**
 * The stage table of a system that has stopped (its profiles are written at exit), over the
 * launches it accepted within the window, beside the goal for the whole (µs a launch: 1,000
 * standalone, 2,000 for the four apps).
 */
export function stageSection(report: Report, title: string, dir: string, launches: number, goalMicros: number, window?: SampleWindow): void {
  if (launches === 0) return;
  try {
    const lines = stageLines(cpuByStageIn(dir, window), launches);
    report.section(
      `CPU per launch by stage (${title}: ${launches} accepted launches${window ? ', after the warm-up' : ''}; goal <= ${goalMicros} µs in all)`,
      lines.map(([stage, figure]) => row(stage, figure)),
    );
  } catch (error) {
    report.notes.push(`no stage table for ${title}: ${(error as Error).message}`);
  }
}
