import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { passwordVariableOf } from '../nats-permissions';

/**
 * A throwaway nats-server with JetStream for tests: its own free port and store directory,
 * so tests never touch a NATS that happens to run on the machine.
 */
export interface NatsServerHandle {
  url: string;
  port: number;
  storeDir: string;
  /** SIGTERM, wait for the exit, and delete the store directory. Final. */
  stop(): Promise<void>;
  /** SIGKILL, like a crash; the store directory stays, so `restart()` recovers it. */
  kill(): void;
  /** Stops the server if it runs, then starts it again on the same port and store directory. */
  restart(): Promise<void>;
  /**
   * With `authorization`: the environment an app connects with as this NATS user (NATS_USER,
   * NATS_PASSWORD). Without: an empty object (the server lets anyone in).
   */
  credentialsOf(user: string): Record<string, string>;
  /** Every "Publish Violation" or "Subscription Violation" line the server logged (a refused publish or subscribe), since it started. */
  permissionViolations(): string[];
}

export interface NatsServerOptions {
  /**
   * Run with the repository's own users and permissions (k8s/datastores/nats-auth.conf), each user
   * with a fresh random password, as production does: a connection without credentials is refused.
   */
  authorization?: boolean;
}

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 10_000;
const EXIT_TIMEOUT_MS = 10_000;
const STDERR_TAIL_CHARS = 4_000;
const DEBIAN_BINARY = '/usr/sbin/nats-server';

// Servers alive in this process: killed on exit even if a test forgot `stop()` or crashed.
const running = new Set<ChildProcess>();
const storeDirs = new Set<string>();
/** A store directory deleted when this process exits, if a test did not delete it. */
export function registerStoreDir(dir: string): void {
  storeDirs.add(dir);
}
export function forgetStoreDir(dir: string): void {
  storeDirs.delete(dir);
}
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
  for (const dir of storeDirs) rmSync(dir, { recursive: true, force: true });
});

export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServerHandle> {
  const binary = resolveBinary();
  const storeDir = mkdtempSync(join(tmpdir(), 'nats-js-'));
  storeDirs.add(storeDir);
  const authorization = options.authorization ? repositoryAuthorization(storeDir) : undefined;
  const started = await onFreshPortsIfTaken(async () => {
    const port = await freePort();
    // The command line's address, port and store win over the file's.
    const args = [...(authorization ? ['-c', authorization.configFile] : []), '-a', HOST, '-p', String(port), '-js', '-sd', storeDir];
    return { port, args, server: await launch(binary, args, port, authorization?.env) };
  });
  const { port, args } = started;
  let server = started.server;
  const violations = server.violations;

  return {
    url: `nats://${HOST}:${port}`,
    port,
    storeDir,
    async stop() {
      await server.terminate();
      rmSync(storeDir, { recursive: true, force: true });
      storeDirs.delete(storeDir);
    },
    kill() {
      server.child.kill('SIGKILL');
    },
    async restart() {
      await server.terminate();
      server = await launch(binary, args, port, authorization?.env, violations);
    },
    credentialsOf(user): Record<string, string> {
      if (!authorization) return {};
      const password = authorization.env[passwordVariableOf(user)];
      if (!password) throw new Error(`k8s/datastores/nats-auth.conf has no NATS user ${user}`);
      return { NATS_USER: user, NATS_PASSWORD: password };
    },
    permissionViolations: () => [...violations],
  };
}

const AUTHORIZATION_FILE = join('k8s', 'datastores', 'nats-auth.conf');

/**
 * A configuration beside the store that includes a copy of the repository's authorization file
 * (nats-server resolves includes relative to the including file), and a random password for each
 * variable the file names.
 */
function repositoryAuthorization(dir: string): { configFile: string; env: Record<string, string> } {
  let root = __dirname;
  while (!existsSync(join(root, AUTHORIZATION_FILE))) {
    if (dirname(root) === root) throw new Error(`${AUTHORIZATION_FILE} not found above ${__dirname}`);
    root = dirname(root);
  }
  const source = join(root, AUTHORIZATION_FILE);
  copyFileSync(source, join(dir, 'nats-auth.conf'));
  const configFile = join(dir, 'nats.conf');
  writeFileSync(configFile, 'include "nats-auth.conf"\n');
  const variables = [...readFileSync(source, 'utf8').matchAll(/password:\s*\$([A-Z0-9_]+)/g)].map((match) => match[1]);
  // A letter first: nats-server parses the variable's value, and one starting with a digit is read as a number.
  const env = Object.fromEntries(variables.map((name) => [name, `p${randomBytes(18).toString('hex')}`]));
  return { configFile, env };
}

/** The nats-server to run: NATS_SERVER_BIN, else `nats-server` on PATH, else Debian's. */
export function resolveBinary(): string {
  const fromEnv = process.env.NATS_SERVER_BIN;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`NATS_SERVER_BIN=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const onPath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, 'nats-server'))
    .find(isExecutable);
  if (onPath) return onPath;
  if (isExecutable(DEBIAN_BINARY)) return DEBIAN_BINARY;
  // Never skip: a bus test that silently does not run proves nothing.
  throw new Error('nats-server not found (NATS_SERVER_BIN, PATH, /usr/sbin/nats-server). ' + "Install Debian's nats-server: apt-get install -y nats-server");
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `start` (which picks its ports with freePort) again, up to three times in all, when a port
 * it picked was taken meanwhile: another test worker may bind it between freePort() releasing it
 * and nats-server binding it.
 */
export async function onFreshPortsIfTaken<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= 3 || !/address already in use/.test((error as Error).message)) throw error;
    }
  }
}

/** Ports this process handed out: the OS may offer a just-released port again (a cluster's nine ports alike). */
const handedOut = new Set<number>();

/**
 * Asks the OS for a free port, never one this process handed out before. Another process could
 * still grab it before nats-server binds: startNatsServer and startNatsCluster then try new ports.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', reject);
      probe.listen(0, HOST, () => {
        const address = probe.address();
        probe.close(() => {
          if (address && typeof address === 'object') resolve(address.port);
          else reject(new Error('could not determine a free port'));
        });
      });
    });
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

export interface RunningServer {
  child: ChildProcess;
  /** The last lines it wrote to stderr (its log), for failure messages. */
  stderrTail(): string;
  /** The log lines that report a permission violation (all of them, not only the tail's). */
  violations: string[];
  /** SIGTERM (if still running) and resolve once the process has exited. */
  terminate(): Promise<void>;
}

/** Starts nats-server with these arguments and resolves once it greets clients on `port`. */
export async function launch(
  binary: string,
  args: string[],
  port: number,
  env: Record<string, string> = {},
  violations: string[] = [],
): Promise<RunningServer> {
  const child = spawn(binary, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  running.add(child);

  let stderrTail = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderrTail = (stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
    for (const line of chunk.split('\n')) if (/Violation/.test(line)) violations.push(line);
  });

  let spawnError: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    const gone = () => {
      running.delete(child);
      resolve();
    };
    child.once('exit', gone);
    child.once('error', (error) => {
      spawnError = error;
      gone();
    });
  });

  const terminate = async () => {
    if (child.exitCode === null && child.signalCode === null && !spawnError) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), EXIT_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
  };

  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await greetsAsNats(port))) {
    const hasExited = child.exitCode !== null || child.signalCode !== null || spawnError !== undefined;
    if (hasExited || Date.now() > deadline) {
      await terminate();
      const reason = spawnError ? spawnError.message : hasExited ? 'exited' : `not ready within ${READY_TIMEOUT_MS} ms`;
      throw new Error(`nats-server on port ${port} ${reason}:\n${stderrTail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, terminate, stderrTail: () => stderrTail, violations };
}

/** True once a NATS server greets on the port with its INFO line (a mere TCP accept could be another program). */
function greetsAsNats(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: HOST, port });
    const finish = (result: boolean) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(1000, () => finish(false));
    socket.once('data', (chunk) => finish(chunk.toString('utf8').startsWith('INFO ')));
    socket.once('error', () => finish(false));
    socket.once('close', () => finish(false));
  });
}
