import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Everything the bench starts or creates, so one cleanup can undo it on every way out: normal
 * end, failure, SIGINT/SIGTERM, the overall deadline, or (last resort, synchronous) 'exit'.
 */
const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();

export function makeTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
  children.delete(child);
}

export async function cleanup(): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child)));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

process.on('exit', () => {
  // Synchronous only: anything still alive here is killed outright.
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/** A free TCP port on 127.0.0.1 (bound, read, released). */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A child process whose output we keep (bounded) for failure messages and the report. */
export class Child {
  private tail = '';
  /** Output lines written after `markReady()`; at LOG_LEVEL=warn every one is worth a look. */
  linesSinceReady = 0;
  private ready = false;
  private partial = '';

  private constructor(readonly proc: ChildProcess) {
    const keep = (chunk: Buffer) => {
      const text = chunk.toString();
      this.tail = (this.tail + text).slice(-20_000);
      if (this.ready) {
        const lines = (this.partial + text).split('\n');
        this.partial = lines.pop() ?? '';
        this.linesSinceReady += lines.filter((line) => line.trim() !== '').length;
      }
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    proc.on('error', (error) => keep(Buffer.from(`could not run: ${error.message}\n`)));
  }

  /** A node script of ours (from dist/), with only PATH inherited from the bench's environment. */
  static spawn(script: string, env: Record<string, string>, options: { cwd?: string; ipc?: boolean; cpuProfileDir?: string | null } = {}): Child {
    if (!existsSync(script)) throw new Error(`${script} is missing: run \`npm run build\` first (\`npm run bench\` does)`);
    // A V8 CPU profile per thread written there when the process stops: the stage table's run's
    // (cpuProfileDir), and no other, since the profiler costs CPU of its own (read them with
    // Chrome DevTools or scripts/cpu-profile-summary.js).
    const dir = options.cpuProfileDir;
    const profile = dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
    return Child.spawnBinary(process.execPath, [...profile, script], env, options);
  }

  /** Any executable (nats-server), owned and cleaned up like the node children. */
  static spawnBinary(binary: string, args: string[], env: Record<string, string>, options: { cwd?: string; ipc?: boolean } = {}): Child {
    const ipc = options.ipc ?? false;
    const child = spawn(binary, args, {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    return new Child(child);
  }

  /** The process id, for /proc (CPU, memory); 0 if it could not be started. */
  get pid(): number {
    return this.proc.pid ?? 0;
  }

  get exited(): boolean {
    return this.proc.exitCode !== null || this.proc.signalCode !== null;
  }

  markReady(): void {
    this.ready = true;
  }

  output(): string {
    return this.tail;
  }

  lastLines(count: number): string[] {
    return this.tail
      .split('\n')
      .filter((l) => l.trim() !== '')
      .slice(-count);
  }

  stop(): Promise<void> {
    return stopChild(this.proc);
  }

  /** The first IPC message, e.g. the port a server bound; fails if the child exits or is slow. */
  firstMessage<T>(timeoutMs: number): Promise<T> {
    return new Promise((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`no message from child in ${timeoutMs} ms:\n${this.tail}`)), timeoutMs);
      this.proc.once('message', (message) => {
        clearTimeout(timer);
        done(message as T);
      });
      this.proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        fail(new Error(`child exited (${signal ?? code}) before it was ready:\n${this.tail}`));
      });
    });
  }

  /** Polls `url` until it answers 2xx; fails if the child exits or `timeoutMs` passes. */
  async waitUntilOk(url: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.exited) throw new Error(`exited during start:\n${this.tail}`);
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        await response.arrayBuffer();
        if (response.ok) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`not ready within ${timeoutMs} ms:\n${this.tail}`);
  }
}
