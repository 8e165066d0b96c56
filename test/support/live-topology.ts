/**
 * The two ways the service runs, for end-to-end tests that take both: `npm start`'s standalone
 * process (embedded storage, the in-process bus), and the four apps as separate processes, each
 * with its own storage, over a real nats-server. Either is reached at `url` as a partner would.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { NatsServerHandle } from '@campaign-ops/testing/bus';
import { startNatsAsDeployed } from './nats';
import { AppName, freePort, ServiceProcess } from './service-process';

export interface Topology {
  url: string;
  /** Every directory the processes (and nats-server) store anything in. */
  storeDirs: string[];
  /** Every process's whole output, for the token search. */
  logLines(): string[];
  /** The process that runs launches: killed with SIGKILL (standalone; dispatch-service over NATS), and started again. */
  launcher: ServiceProcess;
  stop(): Promise<void>;
}

export type TopologyStart = (dataDir: string, env: Record<string, string>) => Promise<Topology>;

/** `npm start`: one process, embedded storage, the in-process bus. */
export const standalone: TopologyStart = async (dataDir, env) => {
  const port = await freePort();
  const service = new ServiceProcess('standalone', port, { ...env, DATA_DIR: dataDir, PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
  await service.start();
  return { url: service.url, storeDirs: [dataDir], logLines: () => lines(service), launcher: service, stop: () => service.stop() };
};

/** The four apps as separate processes, each with its own storage, over a real nats-server. */
export const appsOverNats: TopologyStart = async (dataDir, env) => {
  const nats: NatsServerHandle = await startNatsAsDeployed();
  const port = await freePort();
  const common = {
    ...env,
    NATS_URL: nats.url,
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
    IDEMPOTENCY_SECRET_KEY: randomBytes(32).toString('hex'),
    CONNECTION_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
  };
  const apps: ServiceProcess[] = [];
  const start = async (app: AppName, appPort?: number) => {
    const process = new ServiceProcess(
      app,
      appPort ?? (await freePort()),
      { ...common, ...nats.credentialsOf(app), DATA_DIR: join(dataDir, app) },
      appPort === undefined,
    );
    apps.push(process);
    await process.start();
    return process;
  };
  const stop = async () => {
    await Promise.all(apps.map((app) => app.stop()));
    await nats.stop();
    const violations = nats.permissionViolations();
    if (violations.length > 0) throw new Error(`an app made a call its NATS permissions (k8s/datastores/nats-auth.conf) refuse:\n${violations.join('\n')}`);
  };
  let launcher: ServiceProcess;
  try {
    [, launcher] = await Promise.all([start('connection-service'), start('dispatch-service'), start('webhook-delivery-service')]);
    await start('api-gateway', port);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `http://127.0.0.1:${port}`, storeDirs: [dataDir, nats.storeDir], logLines: () => apps.flatMap(lines), launcher, stop };
};

export const TOPOLOGIES: Array<[string, TopologyStart]> = [
  ['the standalone process', standalone],
  ['the four apps over NATS', appsOverNats],
];

const lines = (service: ServiceProcess) => {
  const { stdout, stderr } = service.outputLines();
  return [...stdout, ...stderr];
};
