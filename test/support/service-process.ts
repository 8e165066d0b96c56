import { ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { freePort } from '@campaign-ops/testing/bus';

export const ROOT = resolve(__dirname, '../..');

/** A free TCP port on 127.0.0.1, never one this process handed out before (the bus testing helpers' own). */
export { freePort };

export type AppName = 'standalone' | 'api-gateway' | 'dispatch-service' | 'connection-service' | 'webhook-delivery-service';

/**
 * One of our apps as a real process, started from the build in dist/ exactly as an operator
 * would (`node dist/apps/<app>/src/main.js`), with its logs kept for failure messages.
 */
export class ServiceProcess {
  private child: ChildProcess | null = null;
  private output = '';
  private lines: Record<'stdout' | 'stderr', { complete: string[]; partial: string }> = {
    stdout: { complete: [], partial: '' },
    stderr: { complete: [], partial: '' },
  };
  /** The API's address; set anew if a start had to move its port. */
  url: string;
  /** METRICS_PORT: the one in `env` if given, else a free one chosen at the first start and kept across restarts. */
  metricsPort: number | null;
  /** How the last run ended: its exit code, or the signal that ended it. */
  lastExit: { code: number | null; signal: NodeJS.Signals | null } | null = null;

  constructor(
    readonly app: AppName,
    public port: number,
    private readonly env: Record<string, string>,
    /**
     * Whether a start may move PORT to another free port when it finds it taken: another process
     * (a parallel test, an outgoing connection's ephemeral port) can take a port between freePort()
     * and the app's listen. Not when the port is known elsewhere (in PUBLIC_BASE_URL, say).
     */
    private readonly portMayMove = false,
  ) {
    this.url = `http://127.0.0.1:${port}`;
    this.metricsPort = env.METRICS_PORT ? Number(env.METRICS_PORT) : null;
  }

  /** Where Prometheus scrapes this app: `http://127.0.0.1:<METRICS_PORT>` (GET /metrics). */
  get metricsUrl(): string {
    if (this.metricsPort === null) throw new Error(`${this.app} has not started: its METRICS_PORT is not chosen yet`);
    return `http://127.0.0.1:${this.metricsPort}`;
  }

  /** `until`: ready (/readyz answers 200, the default) or alive (/healthz: for an app that is meant to start not ready). */
  static async start(app: AppName, env: Record<string, string>, until: 'ready' | 'alive' = 'ready'): Promise<ServiceProcess> {
    const port = await freePort();
    const service = new ServiceProcess(app, port, env, true);
    await service.start(until);
    return service;
  }

  async start(until: 'ready' | 'alive' = 'ready'): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const from = this.output.length;
      try {
        return await this.startOnce(until);
      } catch (error) {
        const inUse = /address already in use [\d.]+:(\d+)|METRICS_PORT (\d+) is already in use/.exec(this.output.slice(from));
        const taken = Number(inUse?.[1] ?? inUse?.[2]);
        if (attempt < 3 && taken === this.metricsPort && this.env.METRICS_PORT === undefined) this.metricsPort = await freePort();
        else if (attempt < 3 && taken === this.port && this.portMayMove) {
          this.port = await freePort();
          this.url = `http://127.0.0.1:${this.port}`;
        } else throw error;
      }
    }
  }

  private async startOnce(until: 'ready' | 'alive'): Promise<void> {
    const main = join(ROOT, 'dist', 'apps', this.app, 'src', 'main.js');
    if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first (npm test does)`);
    // Every app's default METRICS_PORT is fixed (9464-9467): processes side by side need one each.
    this.metricsPort ??= await freePort();
    this.child = spawn(process.execPath, [main], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...this.env, PORT: String(this.port), METRICS_PORT: String(this.metricsPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-20_000);
      const lines = this.lines[stream];
      const parts = (lines.partial + chunk.toString()).split('\n');
      lines.partial = parts.pop()!;
      lines.complete.push(...parts);
    };
    this.lines = { stdout: { complete: [], partial: '' }, stderr: { complete: [], partial: '' } };
    this.child.stdout?.on('data', keep('stdout'));
    this.child.stderr?.on('data', keep('stderr'));
    await this.waitUntilHealthy(30_000, until === 'ready' ? '/readyz' : '/healthz');
  }

  logs(): string {
    return this.output;
  }

  /** Every whole line the current run has written, per stream (for checking the log format). */
  outputLines(): { stdout: string[]; stderr: string[] } {
    return { stdout: [...this.lines.stdout.complete], stderr: [...this.lines.stderr.complete] };
  }

  /** SIGKILL: no shutdown hooks, nothing flushed; what a crash or an OOM kill does. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  async stop(): Promise<void> {
    await this.signal('SIGTERM');
  }

  /** Ctrl-C under `npm start`: SIGINT, and the same again `repeatAfterMs` later (npm forwards the terminal's). */
  async interrupt(repeatAfterMs: number): Promise<void> {
    const repeat = setTimeout(() => this.child?.kill('SIGINT'), repeatAfterMs);
    await this.signal('SIGINT');
    clearTimeout(repeat);
  }

  /** SIGSTOP / SIGCONT: a process that hangs (GC pause, overloaded node) and then carries on. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) =>
      child.once('exit', (code, signal) => {
        this.lastExit = { code, signal };
        done();
      }),
    );
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    this.child = null;
  }

  private async waitUntilHealthy(timeoutMs = 30_000, path = '/readyz'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.child || this.child.exitCode !== null) throw new Error(`${this.app} exited during start:\n${this.output}`);
      try {
        // Bounded: whatever holds the port may accept and never answer.
        const response = await fetch(`${this.url}${path}`, { signal: AbortSignal.timeout(2_000) });
        if (response.ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${this.app} did not become ready in ${timeoutMs} ms:\n${this.output}`);
  }
}
