/**
 * The README's first launch, run for real: test/e2e/first-launch.sh is the text a new user
 * pastes (bash, curl and node only). It starts `npm start` and `npm run receiver` in the
 * background; the receiver must print the dispatch's webhooks with their signatures verified, and
 * a signal to either `npm` must leave no process of it behind.
 *
 * `npm start` rebuilds dist/, which the other e2e specs run from: the script runs in a copy of the
 * repository (its tracked files, node_modules linked) with its own dist/ and data/. The script
 * says localhost:3000 and localhost:4000, as a reader types them; in the copy they become free
 * ports, which the service (PORT) and the receiver (RECEIVER_PORT) take from the environment.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { eventually } from '../support/partner-client';
import { freePort, ROOT } from '../support/service-process';

const SCRIPT = 'test/e2e/first-launch.sh';
const RUN_TIMEOUT_MS = 180_000;
const STOP_WITHIN_MS = 10_000;

/**
 * The working tree as `npm run build` sees it here (tracked files and new ones, not the ignored),
 * node_modules linked: a checkout whose build and data are its own.
 */
function copyOfRepository(): string {
  const copy = mkdtempSync(join(tmpdir(), 'campaign-ops-first-launch-'));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\0');
  for (const file of new Set(files)) {
    if (!file || !existsSync(join(ROOT, file))) continue;
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(copy, file));
  }
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  return copy;
}

interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  state: string;
  args: string;
}

function processes(): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the last ')'.
      const [state, ppid, pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      found.push({ pid: Number(entry), ppid: Number(ppid), pgid: Number(pgid), state, args });
    } catch {
      // gone while listed
    }
  }
  return found;
}

/** A process and its descendants, as they are now. */
function treeOf(root: ProcessInfo, all: ProcessInfo[]): ProcessInfo[] {
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...all.filter((p) => p.ppid === tree[i].pid));
  return tree;
}

/** Still running: present and not a zombie (orphans are reaped by whatever pid 1 is, maybe never). */
function running(pids: number[]): ProcessInfo[] {
  return processes().filter((p) => pids.includes(p.pid) && p.state !== 'Z');
}

/** A failed wait says what the processes printed up to then. */
const withOutput = <T>(wait: Promise<T>, output: () => string): Promise<T> =>
  wait.catch((error: Error) => {
    throw new Error(`${error.message}; the output:\n${output()}`);
  });

/** A new user's shell: none of the settings of the test run, and npm not looking for updates. */
const userEnvironment = () => ({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), npm_config_update_notifier: 'false' });

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // nothing left
  }
}

class FirstLaunch {
  private child: ChildProcess | null = null;
  private text = '';
  exitCode: number | null = null;

  constructor(private readonly copy: string) {}

  async start(): Promise<void> {
    const [apiPort, receiverPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
    const script = readFileSync(join(ROOT, SCRIPT), 'utf8');
    // The reader's ports, as written: if the script stops saying them, this rewrite must change too.
    expect(script).toContain('localhost:3000');
    expect(script).toContain('localhost:4000');
    writeFileSync(
      join(this.copy, SCRIPT),
      script.replaceAll('localhost:3000', `localhost:${apiPort}`).replaceAll('localhost:4000', `localhost:${receiverPort}`),
    );
    this.child = spawn('bash', [SCRIPT], {
      cwd: this.copy,
      // Its own process group, so that afterAll can end everything the script left running.
      detached: true,
      env: {
        ...userEnvironment(),
        PORT: String(apiPort),
        RECEIVER_PORT: String(receiverPort),
        METRICS_PORT: String(metricsPort),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer) => (this.text = (this.text + chunk.toString()).slice(-200_000));
    this.child.stdout!.on('data', keep);
    this.child.stderr!.on('data', keep);
    this.child.once('exit', (code) => (this.exitCode = code));
  }

  get pgid(): number {
    return this.child!.pid!;
  }

  output(): string {
    return this.text;
  }

  lines(pattern: RegExp): string[] {
    return this.text.split('\n').filter((line) => pattern.test(line));
  }

  async finished(): Promise<void> {
    await withOutput(
      eventually(async () => this.exitCode !== null, RUN_TIMEOUT_MS, `${SCRIPT} to finish`),
      () => this.text,
    );
    if (this.exitCode !== 0) throw new Error(`${SCRIPT} exited ${this.exitCode}:\n${this.text}`);
  }

  /** The tree under the `npm` of `npm <args>` that the script left running in the background. */
  jobOf(args: string): ProcessInfo[] {
    const all = processes();
    const npm = all.find((p) => p.pgid === this.pgid && p.state !== 'Z' && p.args.startsWith(`npm ${args}`));
    if (!npm) {
      const group = all.filter((p) => p.pgid === this.pgid).map((p) => p.args);
      throw new Error(`no \`npm ${args}\` runs in the group of ${SCRIPT}, only:\n${group.join('\n')}`);
    }
    return treeOf(npm, all);
  }

  /** Everything the script started, at once and without a chance to clean up. */
  killAll(): void {
    killGroup(this.pgid);
  }
}

/** `kill -<signal> <pid of npm>`, then waits until no process of the job runs any more. */
async function stopJob(job: ProcessInfo[], signal: NodeJS.Signals): Promise<number> {
  const started = Date.now();
  process.kill(job[0].pid, signal);
  const pids = job.map((p) => p.pid);
  await eventually(async () => running(pids).length === 0, STOP_WITHIN_MS, `${job.map((p) => p.args).join(', ')} to stop on ${signal}`);
  return Date.now() - started;
}

/** The receiver's line for one delivery: event type, event id, dispatch id and status, the signature's verdict. */
const delivery = (event: string, status: string) => new RegExp(`^${event.replace('.', '\\.')}\\s+evt_\\w+\\s+(dsp_\\w+) ${status}\\s+signature verified$`);

describe('the first launch of the README, as a new user runs it', () => {
  let copy: string;
  const runs: FirstLaunch[] = [];
  const jobs: ChildProcess[] = [];

  beforeAll(() => {
    copy = copyOfRepository();
  });

  afterAll(() => {
    for (const run of runs) run.killAll();
    for (const job of jobs) killGroup(job.pid!);
    rmSync(copy, { recursive: true, force: true });
  });

  async function firstLaunch(): Promise<FirstLaunch> {
    const run = new FirstLaunch(copy);
    runs.push(run);
    await run.start();
    await run.finished();
    // The script ends on the dispatch's audit trail; the webhooks may still be on their way.
    const completed = () => run.lines(delivery('dispatch.completed', 'completed')).length > 0;
    await withOutput(
      eventually(async () => completed(), 30_000, 'the receiver to print dispatch.completed'),
      () => run.output(),
    );
    return run;
  }

  it(
    'prints the signed dispatch.accepted and dispatch.completed; SIGTERM to either npm stops all of it',
    async () => {
      const run = await firstLaunch();
      const [accepted] = run.lines(delivery('dispatch.accepted', 'accepted'));
      const [completed] = run.lines(delivery('dispatch.completed', 'completed'));
      expect(accepted).toBeDefined();
      expect(delivery('dispatch.completed', 'completed').exec(completed)![1]).toBe(delivery('dispatch.accepted', 'accepted').exec(accepted)![1]);
      expect(run.output()).not.toContain('INVALID');
      // The dispatch and its events, as the script shows them.
      expect(run.output()).toMatch(/"status":"completed"|"status":"accepted"/);
      expect(run.output()).toContain('"type":"DispatchAccepted"');
      // The signing secret is kept, never printed in full.
      expect(run.output()).not.toMatch(/whsec_[0-9A-Za-z_-]{8,}/);

      const receiver = run.jobOf('run receiver');
      expect(receiver.some((p) => p.args.includes('scripts/webhook-receiver.js'))).toBe(true);
      await stopJob(receiver, 'SIGTERM');
      await withOutput(
        eventually(async () => run.lines(/^deleted endpoint whk_\w+$/).length === 1, 5_000, 'the receiver to delete its endpoint'),
        () => run.output(),
      );

      const service = run.jobOf('start');
      expect(service.some((p) => p.args.includes('dist/apps/standalone/src/main.js'))).toBe(true);
      const ms = await stopJob(service, 'SIGTERM');
      expect(ms).toBeLessThan(STOP_WITHIN_MS);
      expect(run.output()).toContain('SIGTERM: finishing work in flight');
    },
    RUN_TIMEOUT_MS + 60_000,
  );

  it(
    'stops on Ctrl-C: SIGINT to the job of `npm start` ends npm and node, node by its graceful stop',
    async () => {
      // A terminal sends Ctrl-C to every process of the foreground job, and npm forwards it to node
      // again: node must finish its graceful stop (npm then exits 0, not 130) through the repeat.
      const [port, metricsPort] = [await freePort(), await freePort()];
      const npm = spawn('npm', ['start'], {
        cwd: copy,
        detached: true, // its own process group: the job a terminal would signal
        env: { ...userEnvironment(), PORT: String(port), METRICS_PORT: String(metricsPort), DATA_DIR: join(copy, 'data-ctrl-c') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      jobs.push(npm);
      let output = '';
      npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<{ code: number | null; signal: string | null }>((done) => npm.once('exit', (code, signal) => done({ code, signal })));
      await withOutput(
        eventually(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, RUN_TIMEOUT_MS, 'npm start to be ready'),
        () => output,
      );

      const all = processes();
      const job = treeOf(
        all.find((p) => p.pid === npm.pid)!,
        all,
      );
      expect(job.map((p) => p.args)).toEqual(['npm start', 'node dist/apps/standalone/src/main.js']);
      process.kill(-npm.pid!, 'SIGINT');
      const timeout = new Promise<'still running'>((done) => setTimeout(() => done('still running'), STOP_WITHIN_MS).unref());
      expect(await Promise.race([exited, timeout])).toEqual({ code: 0, signal: null });
      await eventually(async () => running(job.map((p) => p.pid)).length === 0, STOP_WITHIN_MS, 'every process of the job to end');
      expect(output).toContain('SIGINT: finishing work in flight');
    },
    RUN_TIMEOUT_MS + 30_000,
  );
});
