import { CpuProfile, cpuByStage, stageLines } from './stage-table';

const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({ id, callFrame: { functionName, url }, children });

/** root -> idle, GC, program, a timer tick -> the executor -> SQLite, and express -> JSON.parse. */
const profile: CpuProfile = {
  nodes: [
    frame(1, '(root)', '', [2, 3, 4, 5, 11, 13, 15]),
    frame(2, '(idle)', ''),
    frame(3, '(garbage collector)', ''),
    frame(4, '(program)', ''),
    frame(5, 'processTicksAndRejections', 'node:internal/process/task_queues', [6, 8, 10]),
    frame(6, 'handle', 'file:///srv/dist/libs/dispatching/src/dispatch-executor.js', [7]),
    frame(7, 'run', 'file:///srv/node_modules/better-sqlite3/lib/methods/wrappers.js'),
    frame(8, 'handle', 'file:///srv/node_modules/express/lib/router/layer.js', [9]),
    frame(9, 'parse', ''),
    frame(10, 'listOnTimeout', 'node:internal/timers'),
    frame(11, 'parserOnIncoming', 'node:_http_server', [12]),
    frame(12, 'emit', 'node:events'),
    frame(13, 'Module._load', 'node:internal/modules/cjs/loader', [14]),
    frame(14, 'compileFunction', ''),
    frame(15, 'flush', 'file:///srv/dist/libs/sqlite-wal/src/group-commit.js', [16]),
    frame(16, 'sqliteTransaction', 'file:///srv/node_modules/better-sqlite3/lib/methods/transaction.js'),
  ],
  samples: [2, 3, 4, 7, 7, 9, 10, 12, 14, 16],
  timeDeltas: [1000, 10, 20, 30, 40, 50, 60, 5, 7, 3],
};

describe('the stage table (CPU per launch by stage, from CPU profiles)', () => {
  it("gives each sample to the nearest stage of ours above it, the rest to GC, node's internals or other, and leaves idle out", () => {
    expect(Object.fromEntries(cpuByStage(profile))).toEqual({
      'garbage collector': 10,
      other: 20,
      'executor (the try, its outcome)': 70,
      'gateway (HTTP, auth, validation, idempotency)': 55,
      'node internals': 60,
      'start-up (loading code)': 7,
      'commits (SQLite group commits, every store)': 3,
    });
  });

  it("counts only the samples taken within a window, on the clock of the profile's start plus its deltas", () => {
    // Samples at 1000, 1010, 1030, 1060 (executor), 1100 (executor), 1150 (gateway), 1210, ... µs after a start at 5000.
    const window = { from: 5000 + 1050, to: 5000 + 1160 };
    expect(Object.fromEntries(cpuByStage({ ...profile, startTime: 5000 }, window))).toEqual({
      'executor (the try, its outcome)': 70,
      'gateway (HTTP, auth, validation, idempotency)': 50,
    });
    expect(Object.fromEntries(cpuByStage({ ...profile, startTime: 5000 }, { from: 0, to: 1e9 }))).toEqual(Object.fromEntries(cpuByStage(profile)));
  });

  it('lists the stages in the order a launch crosses them, per launch, with their share, then the total', () => {
    const lines = stageLines(cpuByStage(profile), 10);
    expect(lines.map(([stage]) => stage)).toEqual([
      'start-up (loading code)',
      'gateway (HTTP, auth, validation, idempotency)',
      'executor (the try, its outcome)',
      'commits (SQLite group commits, every store)',
      'garbage collector',
      'node internals',
      'other',
      'all (sampled, idle left out)',
    ]);
    // Loading code is once, in ms, outside the total (218 µs of the rest).
    expect(lines[0][1]).toBe('0 ms once, not in the total');
    expect(lines[2][1]).toMatch(/^\s+7 µs a launch\s+32\.1 %$/);
    expect(lines[7][1]).toMatch(/^\s+22 µs a launch\s+100\.0 %$/);
  });
});
