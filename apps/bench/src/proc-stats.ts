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

/** CPU time of one process in ms, or 0 once it has gone. */
function cpuMsOfPid(pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 0;
  }
  // The command name (2nd field) may hold spaces and parentheses: count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14-17 of proc(5) (utime, stime, cutime, cstime) are at 11-14 counted from field 3.
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i] ?? 0), 0);
  return (ticks * 1000) / TICKS_PER_SECOND;
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
