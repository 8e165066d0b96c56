/**
 * The systems under test, started from the build in dist/ as an operator would: the standalone
 * process, or the four apps over a nats-server of their own (`--nats`). Every process is a Child of
 * processes.ts, so every way out of the bench stops it.
 */
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { connect } from 'nats';
import { BenchFailure, ADMIN_TOKEN, sleep } from './common';
import { Child, freePort, makeTempDir } from './processes';
import { System } from './phases';

export type RunningSystem = System & {
  /** Lines each process wrote at LOG_LEVEL=warn since it was ready, with the last few. */
  logged(): { app: string; lines: number; tail: string[] }[];
  /** The process whose memory is watched (the standalone one), if any. */
  mainPid: number;
  /** From here on, at LOG_LEVEL=warn, anything the processes write is worth reporting. */
  markReady(): void;
  stop(): Promise<void>;
  /** Where the service's processes write their CPU profiles when they stop (the stage table's source); null unless profiled. */
  profileDir: string | null;
};

/** Profiled or not: V8's profiler costs a process CPU of its own, so only the stage table's run is profiled. */
export type SystemOptions = { profile?: boolean; env?: Record<string, string> };

/** A directory for one system's CPU profiles: under BENCH_CPU_PROF when set (kept), else a temporary one. */
function profileDirFor(name: string, profile: boolean | undefined): string | null {
  if (!profile) return null;
  const kept = process.env.BENCH_CPU_PROF;
  if (!kept) return makeTempDir(`campaign-ops-bench-prof-${name}-`);
  const dir = join(kept, `${name}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** What every app gets: quiet logs, the receiver's CA, loopback partners allowed, short retries. */
function commonEnv(caCertPath: string, retrySchedule: string): Record<string, string> {
  return {
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    // Production trusts a partner's certificate through Node's CAs plus NODE_EXTRA_CA_CERTS; the
    // bench's receiver has a certificate of a CA made for this run.
    NODE_EXTRA_CA_CERTS: caCertPath,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_SCHEDULE: retrySchedule,
    // The bench measures capacity, not policy: at the default per-key limit (100/s, burst 200)
    // it would measure the limit and fail on 429s. The limiter still runs on every request.
    RATE_LIMIT_PER_SECOND: '1000000',
    RATE_LIMIT_BURST: '1000000',
  };
}

async function started(app: string, child: Child, url: string): Promise<void> {
  try {
    await child.waitUntilOk(`${url}/readyz`, 30_000);
  } catch (error) {
    throw new BenchFailure(`${app} failed to start: ${(error as Error).message}`);
  }
}

function logsOf(apps: [string, Child][]) {
  return () =>
    apps.map(([app, child]) => ({
      app,
      lines: child.linesSinceReady,
      tail: child.linesSinceReady > 0 ? child.lastLines(Math.min(100, child.linesSinceReady)) : [],
    }));
}

export async function startStandalone(root: string, caCertPath: string, retrySchedule: string, options: SystemOptions = {}): Promise<RunningSystem> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const main = join(root, 'dist', 'apps', 'standalone', 'src', 'main.js');
  const profileDir = profileDirFor('standalone', options.profile);
  const child = Child.spawn(
    main,
    {
      ...commonEnv(caCertPath, retrySchedule),
      PORT: String(port),
      METRICS_PORT: String(await freePort()),
      DATA_DIR: makeTempDir('campaign-ops-bench-'),
      ADMIN_TOKEN,
      ...options.env,
    },
    { cwd: root, cpuProfileDir: profileDir },
  );
  await started('the standalone service', child, base);
  return {
    base,
    pids: () => [child.pid],
    mainPid: child.pid,
    logged: logsOf([['standalone', child]]),
    markReady: () => child.markReady(),
    stop: () => child.stop(),
    profileDir,
  };
}

const NATS_DEBIAN_BINARY = '/usr/sbin/nats-server';
/** What docs/operations.md's "Running the four apps on one machine" exports for the four apps. */
export const FOUR_APPS_NODE_OPTIONS = '--max-semi-space-size=4';

/** NATS_SERVER_BIN, else nats-server on PATH, else Debian's; null if there is none. */
export function natsServerBinary(): string | null {
  const executable = (path: string) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (process.env.NATS_SERVER_BIN) return executable(process.env.NATS_SERVER_BIN) ? process.env.NATS_SERVER_BIN : null;
  const candidates = [
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'nats-server')),
    NATS_DEBIAN_BINARY,
  ];
  return candidates.find(executable) ?? null;
}

/** True once a NATS client can connect to the port (and so the server is ready for the apps). */
async function natsAnswers(url: string): Promise<boolean> {
  try {
    const connection = await connect({ servers: url, reconnect: false, timeout: 1000 });
    await connection.close();
    return true;
  } catch {
    return false;
  }
}

/**
 * nats-server with JetStream (own port and store) and the four apps, as docs/operations.md's "Running the four
 * apps on one machine": each app its own DATA_DIR, the secrets shared, the gateway started last.
 */
export async function startFourApps(root: string, caCertPath: string, retrySchedule: string, options: SystemOptions = {}): Promise<RunningSystem> {
  const binary = natsServerBinary();
  if (!binary) throw new BenchFailure("nats-server not found (NATS_SERVER_BIN, PATH, /usr/sbin/nats-server); install Debian's: apt-get install -y nats-server");
  const natsPort = await freePort();
  const nats = Child.spawnBinary(binary, ['-a', '127.0.0.1', '-p', String(natsPort), '-js', '-sd', makeTempDir('campaign-ops-bench-nats-')], {});
  const natsUrl = `nats://127.0.0.1:${natsPort}`;
  const deadline = Date.now() + 10_000;
  while (!(await natsAnswers(natsUrl))) {
    if (nats.exited || Date.now() > deadline) throw new BenchFailure(`nats-server did not start on port ${natsPort}:\n${nats.output()}`);
    await sleep(50);
  }
  const dataDir = makeTempDir('campaign-ops-bench-apps-');
  const common = {
    ...commonEnv(caCertPath, retrySchedule),
    NATS_URL: natsUrl,
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
    IDEMPOTENCY_SECRET_KEY: randomBytes(32).toString('hex'),
    CONNECTION_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    // As docs/operations.md runs them: four Node processes on one machine, each a small young generation.
    NODE_OPTIONS: FOUR_APPS_NODE_OPTIONS,
  };
  const gatewayPort = await freePort();
  const base = `http://127.0.0.1:${gatewayPort}`;
  const profileDir = profileDirFor('four-apps', options.profile);
  const start = async (app: string, extra: Record<string, string>, port?: number): Promise<[string, Child]> => {
    const appPort = port ?? (await freePort());
    const child = Child.spawn(
      join(root, 'dist', 'apps', app, 'src', 'main.js'),
      { ...common, DATA_DIR: join(dataDir, app), PORT: String(appPort), METRICS_PORT: String(await freePort()), ...extra, ...options.env },
      { cwd: root, cpuProfileDir: profileDir },
    );
    await started(app, child, `http://127.0.0.1:${appPort}`);
    return [app, child];
  };
  const services = await Promise.all([
    start('connection-service', { PUBLIC_BASE_URL: base }),
    start('dispatch-service', {}),
    start('webhook-delivery-service', {}),
  ]);
  const gateway = await start('api-gateway', { ADMIN_TOKEN }, gatewayPort);
  const apps: [string, Child][] = [gateway, ...services, ['nats-server', nats]];
  return {
    base,
    pids: () => apps.map(([, child]) => child.pid),
    mainPid: 0,
    logged: logsOf(apps.filter(([app]) => app !== 'nats-server')),
    markReady: () => apps.forEach(([, child]) => child.markReady()),
    // The gateway first, nats-server last, so no app spends its grace reconnecting.
    stop: async () => {
      await gateway[1].stop();
      await Promise.all(services.map(([, child]) => child.stop()));
      await nats.stop();
    },
    profileDir,
  };
}
