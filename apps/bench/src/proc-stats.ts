import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

/**
 * What the kernel says about the processes the bench started, from /proc (Linux only): CPU time
 * (utime + stime, plus what their own reaped children used) and resident memory. Read before and
 * after a measured interval; the difference is the CPU the interval cost, whoever did the work.
 */

/** Clock ticks per second of /proc/<pid>/stat: 100 on every Linux the bench runs on (getconf CLK_TCK). */
const TICKS_PER_SECOND = 100;

export const procAvailable = (): boolean => existsSync('/proc/self/stat');

/**
 * The CPU time in ms that a /proc/<pid>/stat (or .../task/<tid>/stat) line counts: utime + stime,
 * and with `reapedChildren` cutime + cstime too.
 */
function statCpuMs(stat: string, reapedChildren: boolean): number {
  // The command name (2nd field) may hold spaces and parentheses: count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14-17 of proc(5) (utime, stime, cutime, cstime) are at 11-14 counted from field 3.
  const ticks = (reapedChildren ? [11, 12, 13, 14] : [11, 12]).reduce((sum, i) => sum + Number(fields[i] ?? 0), 0);
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** CPU time of one process in ms, or 0 once it has gone. */
function cpuMsOfPid(pid: number): number {
  try {
    return statCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'), true);
  } catch {
    return 0;
  }
}

/** The pid and every live descendant of it (through /proc/<pid>/task/<tid>/children). */
function withDescendants(pid: number): number[] {
  const found = [pid];
  for (let i = 0; i < found.length; i++) {
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${found[i]}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        const children = readFileSync(`/proc/${found[i]}/task/${tid}/children`, 'utf8').trim();
        if (children) found.push(...children.split(/\s+/).map(Number));
      } catch {
        // gone meanwhile
      }
    }
  }
  return [...new Set(found)];
}

/** Total CPU time in ms of these processes and their descendants. */
export function treeCpuMs(pids: number[]): number {
  const all = new Set(pids.filter((p) => p > 0).flatMap(withDescendants));
  return [...all].reduce((sum, pid) => sum + cpuMsOfPid(pid), 0);
}

/** A `Vm…` line of /proc/<pid>/status in MB (VmRSS: now; VmHWM: the peak since start), or null. */
export function memoryMb(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/**
 * CPU of a set of processes over an interval: `start()` before, `stop()` after. Wall time too, so
 * an interval's CPU can be read as a share of one core.
 */
export class CpuMeter {
  private cpuAt = 0;
  private wallAt = 0;
  constructor(private readonly pids: () => number[]) {}
  start(): this {
    this.cpuAt = treeCpuMs(this.pids());
    this.wallAt = performance.now();
    return this;
  }
  stop(): { cpuMs: number; wallMs: number } {
    return { cpuMs: treeCpuMs(this.pids()) - this.cpuAt, wallMs: performance.now() - this.wallAt };
  }
}

/** Samples VmRSS every `everyMs` and keeps the highest per phase label (VmHWM gives the overall peak). */
export class RssSampler {
  readonly peakByPhase = new Map<string, number>();
  private phase = 'start';
  private readonly timer: NodeJS.Timeout;
  constructor(
    private readonly pid: number,
    everyMs = 200,
  ) {
    this.timer = setInterval(() => this.sample(), everyMs);
    this.timer.unref();
  }
  setPhase(phase: string): void {
    this.sample();
    this.phase = phase;
  }
  sample(): void {
    const rss = memoryMb(this.pid, 'VmRSS');
    if (rss !== null) this.peakByPhase.set(this.phase, Math.max(this.peakByPhase.get(this.phase) ?? 0, rss));
  }
  stop(): void {
    this.sample();
    clearInterval(this.timer);
  }
}

/** One thread as /proc shows it: its name, CPU time (user + system) and time spent runnable but waiting for a core, in ms. */
export type ThreadTimes = { tid: number; name: string; cpuMs: number; waitMs: number };

/**
 * The threads of `pid` now (none once it has gone). The wait is the kernel's run delay
 * (/proc/<pid>/task/<tid>/schedstat, in ns), NaN where the kernel keeps no scheduler statistics.
 */
export function threadTimes(pid: number): ThreadTimes[] {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const threads: ThreadTimes[] = [];
  for (const tid of tids) {
    const dir = `/proc/${pid}/task/${tid}`;
    try {
      const cpuMs = statCpuMs(readFileSync(`${dir}/stat`, 'utf8'), false);
      const name = readFileSync(`${dir}/comm`, 'utf8').trim();
      let waitMs = NaN;
      try {
        waitMs = Number(readFileSync(`${dir}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
      } catch {
        // no scheduler statistics in this kernel
      }
      threads.push({ tid: Number(tid), name, cpuMs, waitMs });
    } catch {
      // ended meanwhile
    }
  }
  return threads;
}

/** What a process is, for a table: its app (dist/apps/<app>/...), else its program's name; and whether it is a Node process. */
export function processLabel(pid: number): { label: string; node: boolean } {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const app = argv.map((arg) => /(?:^|\/)apps\/([^/]+)\/src\/main\.js$/.exec(arg)?.[1]).find((name) => name !== undefined);
    const program = argv[0].split('/').pop() || `pid ${pid}`;
    return { label: app ?? program, node: app !== undefined || /^node(js)?$/.test(program) };
  } catch {
    return { label: `pid ${pid}`, node: false };
  }
}

/** A line of the table by thread: what ran (a process's main thread, a named thread, or the unnamed rest), its CPU and its wait. */
export type ThreadRow = { label: string; main: boolean; threads: number; cpuMs: number; waitMs: number };

/**
 * The threads' CPU and wait over an interval, by what they are: of a Node process (the service's apps),
 * its main thread (its thread id is the pid), each name its worker threads give themselves
 * (nameThread), and the threads that kept the process's name (V8's and libuv's helpers) together;
 * of any other program (nats-server), all its threads together. A thread that started during the
 * interval counts from zero; one that ended is not counted.
 */
export function threadRows(owner: { label: string; node: boolean }, pid: number, before: ThreadTimes[], after: ThreadTimes[]): ThreadRow[] {
  const { label, node } = owner;
  const earlier = new Map(before.map((t) => [t.tid, t]));
  const mainName = after.find((t) => t.tid === pid)?.name;
  const rows = new Map<string, ThreadRow>();
  for (const thread of after) {
    const from = earlier.get(thread.tid) ?? { cpuMs: 0, waitMs: 0 };
    const what = !node
      ? `${label}, all threads`
      : thread.tid === pid
        ? `${label} main thread`
        : thread.name === mainName
          ? `${label} helpers (V8, libuv)`
          : `${label} ${thread.name}`;
    const row = rows.get(what) ?? { label: what, main: node && thread.tid === pid, threads: 0, cpuMs: 0, waitMs: 0 };
    row.threads += 1;
    row.cpuMs += thread.cpuMs - from.cpuMs;
    row.waitMs += thread.waitMs - from.waitMs;
    rows.set(what, row);
  }
  // The main thread first, then by CPU.
  return [...rows.values()].sort((a, b) => Number(b.main) - Number(a.main) || b.cpuMs - a.cpuMs);
}

/** The threads of a set of processes over an interval: `start()` before, `stop()` after. */
export class ThreadMeter {
  private before = new Map<number, ThreadTimes[]>();
  private wallAt = 0;
  constructor(private readonly pids: () => number[]) {}
  start(): this {
    this.before = new Map(this.pids().map((pid) => [pid, threadTimes(pid)]));
    this.wallAt = performance.now();
    return this;
  }
  stop(): { rows: ThreadRow[]; wallMs: number } {
    const wallMs = performance.now() - this.wallAt;
    const rows = this.pids().flatMap((pid) => threadRows(processLabel(pid), pid, this.before.get(pid) ?? [], threadTimes(pid)));
    return { rows, wallMs };
  }
}
