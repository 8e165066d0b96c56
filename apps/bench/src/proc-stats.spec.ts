import { fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { processLabel, ThreadMeter, threadRows, threadTimes, ThreadTimes } from './proc-stats';

const at = (tid: number, name: string, cpuMs: number, waitMs: number): ThreadTimes => ({ tid, name, cpuMs, waitMs });

describe('threadRows', () => {
  it("given a process's threads before and after, tells its main thread, each named thread and the unnamed helpers together, the main thread first", () => {
    const before = [at(100, 'node', 1_000, 200), at(101, 'node', 50, 10), at(102, 'node', 40, 5), at(103, 'webhook-sender', 300, 30)];
    const after = [at(100, 'node', 1_400, 260), at(101, 'node', 70, 30), at(102, 'node', 50, 10), at(103, 'webhook-sender', 420, 50)];
    expect(threadRows({ label: 'standalone', node: true }, 100, before, after)).toEqual([
      { label: 'standalone main thread', main: true, threads: 1, cpuMs: 400, waitMs: 60 },
      { label: 'standalone webhook-sender', main: false, threads: 1, cpuMs: 120, waitMs: 20 },
      { label: 'standalone helpers (V8, libuv)', main: false, threads: 2, cpuMs: 30, waitMs: 25 },
    ]);
  });

  it('counts a thread that started during the interval from zero, and one that ended not at all', () => {
    const rows = threadRows(
      { label: 'app', node: true },
      7,
      [at(7, 'node', 10, 1), at(8, 'event-append', 99, 9)],
      [at(7, 'node', 12, 2), at(9, 'event-append', 5, 1)],
    );
    expect(rows).toEqual([
      { label: 'app main thread', main: true, threads: 1, cpuMs: 2, waitMs: 1 },
      { label: 'app event-append', main: false, threads: 1, cpuMs: 5, waitMs: 1 },
    ]);
  });

  it("puts all the threads of a program that is not one of the service's Node processes (nats-server) on one line", () => {
    const rows = threadRows({ label: 'nats-server', node: false }, 5, [], [at(5, 'nats-server', 1, 0), at(6, 'nats-server', 2, 1), at(7, 'nats-server', 3, 2)]);
    expect(rows).toEqual([{ label: 'nats-server, all threads', main: false, threads: 3, cpuMs: 6, waitMs: 3 }]);
  });
});

const linux = existsSync('/proc/self/task');

(linux ? describe : describe.skip)('threads from /proc', () => {
  it("reads this process's threads, its main thread's id being its pid, and a worker's CPU over an interval", async () => {
    const meter = new ThreadMeter(() => [process.pid]).start();
    const worker = new Worker(
      "require('fs').writeFileSync('/proc/thread-self/comm', 'spin-spec'); const until = Date.now() + 200; while (Date.now() < until); require('worker_threads').parentPort.postMessage('done'); setInterval(() => {}, 1e4)",
      { eval: true },
    );
    try {
      await once(worker, 'message');
      const { rows, wallMs } = meter.stop();
      expect(threadTimes(process.pid).some((t) => t.tid === process.pid)).toBe(true);
      expect(wallMs).toBeGreaterThanOrEqual(150);
      const spin = rows.find((r) => r.label.endsWith(' spin-spec'));
      // 200 ms spent on a core, at 10 ms a tick: at least 150 of it.
      expect(spin?.cpuMs).toBeGreaterThanOrEqual(150);
      expect(rows[0]).toMatchObject({ main: true, label: expect.stringMatching(/ main thread$/) });
    } finally {
      await worker.terminate();
    }
  });

  it('labels a process by its app (dist/apps/<app>/src/main.js), else by its program, else by its pid, and tells a Node process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proc-stats-spec-'));
    mkdirSync(join(dir, 'apps', 'demo-app', 'src'), { recursive: true });
    writeFileSync(join(dir, 'apps', 'demo-app', 'src', 'main.js'), "process.send('up'); setInterval(() => {}, 1e4);");
    const app = fork(join(dir, 'apps', 'demo-app', 'src', 'main.js'));
    const program = spawn('sleep', ['5']);
    try {
      await once(app, 'message');
      expect(processLabel(app.pid!)).toEqual({ label: 'demo-app', node: true });
      expect(processLabel(program.pid!)).toEqual({ label: 'sleep', node: false });
      expect(processLabel(process.pid).node).toBe(/\/node(js)?$/.test(process.execPath));
      expect(processLabel(2 ** 22 + 12_345)).toEqual({ label: `pid ${2 ** 22 + 12_345}`, node: false });
    } finally {
      app.kill();
      program.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
