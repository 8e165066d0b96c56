/**
 * The apps a launch needs (no webhook-delivery-service) over a real nats-server, with replicas: the processes of one app share that app's
 * DATA_DIR, i.e. one SQLite event store and one read store, as replicas share EventStoreDB and
 * MongoDB in production. The SQLite adapters are built for that: WAL (readers never block the
 * writer), a 5 s busy timeout (writers of other processes wait instead of failing), appends and
 * every read-modify-write in IMMEDIATE transactions (the write lock is taken before the read), and
 * positions committed in order. It needs the processes on one host, as here: SQLite's locks do not
 * work over a network file system.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, Msg, NatsConnection } from 'nats';
import { NatsServerHandle } from '@campaign-ops/testing/bus';
import { startNatsAsDeployed } from './nats';
import { PartnerClient } from './partner-client';
import { AppName, ServiceProcess } from './service-process';

export const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

export interface AppsOverNats {
  nats: NatsServerHandle;
  /** The apps' DATA_DIRs are `<dataDir>/<app>`: the stores every replica of that app shares. */
  dataDir: string;
  gateways: ServiceProcess[];
  dispatchServices: ServiceProcess[];
  connectionService: ServiceProcess;
  /** The Admin API on the first gateway. */
  admin: PartnerClient;
  stop(): Promise<void>;
}

export async function startAppsOverNats(replicas: { gateways: number; dispatchServices: number }, env: Record<string, string> = {}): Promise<AppsOverNats> {
  const dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-replicas-'));
  const nats = await startNatsAsDeployed();
  const started: ServiceProcess[] = [];
  const common = {
    NATS_URL: nats.url,
    // Replicas of an app share their secrets, as they share their stores.
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
    IDEMPOTENCY_SECRET_KEY: randomBytes(32).toString('hex'),
    CONNECTION_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    ...env,
  };
  const start = async (app: AppName, count: number, extra: Record<string, string> = {}) => {
    // Started together, as an orchestrator does: they also race to create the schema.
    const processes = await Promise.all(
      Array.from({ length: count }, () => ServiceProcess.start(app, { ...common, ...nats.credentialsOf(app), DATA_DIR: join(dataDir, app), ...extra })),
    );
    started.push(...processes);
    return processes;
  };
  const stop = async () => {
    await Promise.all(started.map((app) => app.stop()));
    await nats.stop();
    rmSync(dataDir, { recursive: true, force: true });
    const violations = nats.permissionViolations();
    if (violations.length > 0) throw new Error(`an app made a call its NATS permissions (k8s/datastores/nats-auth.conf) refuse:\n${violations.join('\n')}`);
  };
  try {
    const [dispatchServices, [connectionService]] = await Promise.all([start('dispatch-service', replicas.dispatchServices), start('connection-service', 1)]);
    const gateways = await start('api-gateway', replicas.gateways, { ADMIN_TOKEN, RATE_LIMIT_PER_SECOND: '1000', RATE_LIMIT_BURST: '1000' });
    return { nats, dataDir, gateways, dispatchServices, connectionService, admin: new PartnerClient(gateways[0].url, ADMIN_TOKEN), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Watches the requests on one bus subject from outside, as a plain (non-queue) subscriber that
 * never answers, and tells which connection sent each: a NATS client's replies come to its own
 * inbox (`_INBOX.<user>.<connection id>.<request>`). Replicas are thereby told apart. It connects
 * as the NATS user that serves the subject (the only one its permissions let subscribe to it).
 */
export class RequestWatcher {
  private readonly bySender = new Map<string, number>();

  private constructor(private readonly connection: NatsConnection) {}

  static async start(nats: NatsServerHandle, subject: string, servedBy: string): Promise<RequestWatcher> {
    const { NATS_USER: user, NATS_PASSWORD: pass } = nats.credentialsOf(servedBy);
    const connection = await connect({ servers: nats.url, name: 'test-request-watcher', user, pass, inboxPrefix: `_INBOX.${user}.watcher` });
    const watcher = new RequestWatcher(connection);
    connection.subscribe(subject, { callback: (_error, msg) => watcher.record(msg) });
    await connection.flush();
    return watcher;
  }

  /** How many requests each sending connection made. */
  senders(): number[] {
    return [...this.bySender.values()];
  }

  /** How many requests were seen. */
  count(): number {
    return this.senders().reduce((a, b) => a + b, 0);
  }

  close(): Promise<void> {
    return this.connection.close();
  }

  private record(msg: Msg): void {
    const sender = msg.reply ? msg.reply.slice(0, msg.reply.lastIndexOf('.')) : '(no reply subject)';
    this.bySender.set(sender, (this.bySender.get(sender) ?? 0) + 1);
  }
}
