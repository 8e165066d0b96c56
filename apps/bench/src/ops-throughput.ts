/**
 * Export and rebuild throughput on the embedded stores (goals: 100,000 events/s, and a 1M-event
 * store within 12x the time of a 100k one). Each size gets a fresh temporary directory, an event
 * store filled by direct appends of a production-shaped history (appendSyntheticHistory: the real
 * deciders, no services), then RUNS full exports and RUNS full rebuilds of every read model (each
 * into a new file and a new read store); the median run is reported, with the fastest and the
 * slowest beside it, because one run on a shared machine can be a third off either way. Then the
 * directory is removed. Runnable alone: `node dist/apps/bench/src/ops-throughput.js [sizes...]`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportEvents } from '@campaign-ops/event-export';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { appendSyntheticHistory, READ_MODELS, rebuildReadModels } from '@campaign-ops/read-model-rebuild';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';

/**
 * The V8 flags `npm run ops` runs with (package.json): an export or rebuild makes several KB of
 * short-lived strings per event, and a 64 MB young generation halves the time spent collecting them.
 */
export const OPS_NODE_FLAGS = ['--max-semi-space-size=64'];

export const OPS_GOAL_EVENTS_PER_SECOND = 100_000;
export const OPS_GOAL_SCALING = 12;
/** Runs of each operation per size: the median is reported. */
const RUNS = 3;

interface Measured {
  events: number;
  /** Each run's seconds, fastest first. */
  exportSeconds: number[];
  rebuildSeconds: number[];
}

async function measureOne(size: number): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ops-'));
  const events = SqliteEventStore.open(join(dir, 'events.sqlite'));
  const measured: Measured = { events: 0, exportSeconds: [], rebuildSeconds: [] };
  const timed = async <T>(seconds: number[], run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await run();
    seconds.push((performance.now() - started) / 1000);
    return result;
  };
  try {
    measured.events = await appendSyntheticHistory(events, size);
    for (let run = 0; run < RUNS; run++) {
      const file = join(dir, 'export.jsonl');
      const manifest = await timed(measured.exportSeconds, () => exportEvents(events, {}, file));
      rmSync(file);
      // Each rebuild into an empty read store, as the first: the same work every run.
      const readsFile = join(dir, `read-models-${run}.sqlite`);
      const reads = SqliteReadStore.open(readsFile);
      try {
        const report = await timed(measured.rebuildSeconds, () => rebuildReadModels(events, reads, READ_MODELS));
        if (manifest.count !== measured.events || report.events !== measured.events)
          throw new Error(`appended ${measured.events} events, exported ${manifest.count}, rebuilt from ${report.events}`);
      } finally {
        await reads.close();
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${readsFile}${suffix}`, { force: true });
      }
    }
    measured.exportSeconds.sort((a, b) => a - b);
    measured.rebuildSeconds.sort((a, b) => a - b);
    return measured;
  } finally {
    await events.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (sorted: number[]) => sorted[Math.floor(sorted.length / 2)];

const perSecond = (events: number, seconds: number) => Math.round(events / seconds);

/** Measures each size in turn; answers the report's lines (and tells each as it is measured). */
export async function measureOpsThroughput(sizes: number[] = [100_000, 1_000_000], tell: (line: string) => void = () => undefined): Promise<string[]> {
  const lines: string[] = [];
  const say = (line: string) => {
    lines.push(line);
    tell(line);
  };
  const measured: Measured[] = [];
  for (const size of sizes) {
    const m = await measureOne(size);
    measured.push(m);
    for (const [what, seconds] of [
      ['export', m.exportSeconds],
      ['rebuild --all', m.rebuildSeconds],
    ] as const) {
      const rate = perSecond(m.events, median(seconds));
      const spread = `${RUNS} runs: ${perSecond(m.events, seconds[seconds.length - 1])}-${perSecond(m.events, seconds[0])}`;
      say(
        `  ops ${what.padEnd(14)} ${String(m.events).padStart(8)} events  ${median(seconds).toFixed(2).padStart(6)} s  ${String(rate).padStart(7)} events/s  ` +
          `(median of ${spread})  (goal ${OPS_GOAL_EVENTS_PER_SECOND}: ${rate >= OPS_GOAL_EVENTS_PER_SECOND ? 'met' : 'not met'})`,
      );
    }
  }
  if (measured.length >= 2) {
    const [small, large] = [measured[0], measured[measured.length - 1]];
    const factor = large.events / small.events;
    const ratio = (a: number[], b: number[]) => (median(a) / median(b)).toFixed(1);
    say(
      `  ${large.events} vs ${small.events} events (${factor.toFixed(0)}x, medians): export ${ratio(large.exportSeconds, small.exportSeconds)}x the time, ` +
        `rebuild ${ratio(large.rebuildSeconds, small.rebuildSeconds)}x (goal <= ${OPS_GOAL_SCALING}x)`,
    );
  }
  return lines;
}

/**
 * Measures in a child process started as `npm run ops` starts the command line (OPS_NODE_FLAGS),
 * so the figures are those of the commands an operator runs, not of the bench process's heap.
 */
export function measureOpsThroughputAsTheCliRuns(tell: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...OPS_NODE_FLAGS, __filename], { stdio: ['ignore', 'pipe', 'inherit'] });
    let partial = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop()!;
      for (const line of parts) tell(line);
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`ops throughput measurement ended with ${signal ?? `exit code ${code}`}`))));
  });
}

if (require.main === module) {
  const sizes = process.argv
    .slice(2)
    .map(Number)
    .filter((n) => Number.isSafeInteger(n) && n > 0);
  measureOpsThroughput(sizes.length ? sizes : undefined, (line) => console.log(line)).catch((error: Error) => {
    console.error(error);
    process.exit(1);
  });
}
