/**
 * Export and rebuild throughput on the embedded stores (issue 9: 100,000 events/s, and a 1M-event
 * store within 12x the time of a 100k one). Each size gets a fresh temporary directory, an event
 * store filled by direct appends of a production-shaped history (appendSyntheticHistory: the real
 * deciders, no services), one full export and one full rebuild of every read model; then the
 * directory is removed. Runnable alone: `node dist/apps/bench/src/ops-throughput.js [sizes...]`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportEvents } from '@campaign-ops/event-export';
import { SqliteEventStore } from '@campaign-ops/event-store';
import { appendSyntheticHistory, READ_MODELS, rebuildReadModels } from '@campaign-ops/read-model-rebuild';
import { SqliteReadStore } from '@campaign-ops/read-store';

/**
 * The V8 flags `npm run ops` runs with (package.json): an export or rebuild makes several KB of
 * short-lived strings per event, and a 64 MB young generation halves the time spent collecting them.
 */
export const OPS_NODE_FLAGS = ['--max-semi-space-size=64'];

export const OPS_GOAL_EVENTS_PER_SECOND = 100_000;
export const OPS_GOAL_SCALING = 12;

interface Measured {
  events: number;
  exportSeconds: number;
  rebuildSeconds: number;
}

async function measureOne(size: number): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ops-'));
  const events = SqliteEventStore.open(join(dir, 'events.sqlite'));
  const reads = SqliteReadStore.open(join(dir, 'read-models.sqlite'));
  try {
    const appended = await appendSyntheticHistory(events, size);
    let started = performance.now();
    const manifest = await exportEvents(events, {}, join(dir, 'export.jsonl'));
    const exportSeconds = (performance.now() - started) / 1000;
    started = performance.now();
    const report = await rebuildReadModels(events, reads, READ_MODELS);
    const rebuildSeconds = (performance.now() - started) / 1000;
    if (manifest.count !== appended || report.events !== appended) throw new Error(`appended ${appended} events, exported ${manifest.count}, rebuilt from ${report.events}`);
    return { events: appended, exportSeconds, rebuildSeconds };
  } finally {
    await reads.close();
    await events.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

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
    for (const [what, seconds] of [['export', m.exportSeconds], ['rebuild --all', m.rebuildSeconds]] as const) {
      const rate = perSecond(m.events, seconds);
      say(`  ops ${what.padEnd(14)} ${String(m.events).padStart(8)} events  ${seconds.toFixed(2).padStart(6)} s  ${String(rate).padStart(7)} events/s  (goal ${OPS_GOAL_EVENTS_PER_SECOND}: ${rate >= OPS_GOAL_EVENTS_PER_SECOND ? 'met' : 'not met'})`);
    }
  }
  if (measured.length >= 2) {
    const [small, large] = [measured[0], measured[measured.length - 1]];
    const factor = large.events / small.events;
    const ratio = (a: number, b: number) => (a / b).toFixed(1);
    say(
      `  ${large.events} vs ${small.events} events (${factor.toFixed(0)}x): export ${ratio(large.exportSeconds, small.exportSeconds)}x the time, ` +
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
  const sizes = process.argv.slice(2).map(Number).filter((n) => Number.isSafeInteger(n) && n > 0);
  measureOpsThroughput(sizes.length ? sizes : undefined, (line) => console.log(line)).catch((error: Error) => {
    console.error(error);
    process.exit(1);
  });
}
