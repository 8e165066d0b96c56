import { isIP } from 'node:net';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseDurationList } from '@campaign-ops/durations';

/**
 * WEBHOOK_RETRY_SCHEDULE's default: webhook-domain's DEFAULT_RETRY_SCHEDULE (docs/api.md#webhooks-and-signatures), repeated
 * here so the runtime needs no domain lib; webhook-delivery's config spec holds the two equal.
 */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5s,30s,2m,10m,30m,1h,2h,4h,8h,12h,24h,24h';

/**
 * The files of the embedded stores and the keys the standalone generates, in DATA_DIR: what the
 * apps open and what `ops backup` copies, named once.
 */
export const DATA_DIR_FILES = {
  eventStore: 'events.sqlite',
  readStore: 'read-models.sqlite',
  bus: 'bus.sqlite',
  generatedKeys: 'generated-keys.json',
} as const;

export type AppName = 'standalone' | 'api-gateway' | 'dispatch-service' | 'connection-service' | 'webhook-delivery-service' | 'ops-cli';

/** Everything an app reads from its environment, read and checked once at start-up. */
export interface ServiceConfig {
  app: AppName;
  port: number;
  /** Prometheus' /metrics, on a port of its own (never the API's): the Ingress never routes it, and only the monitoring namespace may reach it. */
  metricsPort: number;
  /** Embedded storage (SQLite files) and generated keys live here. */
  dataDir: string;
  /** Set: the bus is NATS JetStream; unset: in-process (standalone only). */
  natsUrl: string | null;
  /** Replicas of the JetStream streams (events and parked messages): 1 on one server, 3 or 5 on a cluster. */
  natsStreamReplicas: number;
  /**
   * NATS_PASSWORD set: the app's NATS user (NATS_USER, by default the app's name; `ops` for ops-cli)
   * and password, as k8s/datastores/nats-auth.conf gives them permissions. Unset: a server without
   * authorization (local development and the standalone's tests).
   */
  natsCredentials: { user: string; password: string } | null;
  /** NATS_TLS_CA_FILE: the CA of a `tls://` server's certificate, when not a public one. */
  natsTlsCaFile: string | null;
  /**
   * Whether the app creates and updates the JetStream streams (NATS_MANAGE_STREAMS). By default only
   * where no NATS user is set, and for ops-cli: with authorization, the services may only read the
   * streams' settings, and `ops bus setup` makes them.
   */
  natsManageStreams: boolean;
  /** Set: EventStoreDB is the event store; unset: SQLite in DATA_DIR. */
  eventStoreUrl: string | null;
  /** Set: MongoDB keeps the read models; unset: SQLite in DATA_DIR. */
  mongodbUrl: string | null;
  /** MONGODB_PASSWORD set: the app's MongoDB user (MONGODB_USER, by default the app's name), authenticated against `admin`. */
  mongodbCredentials: { user: string; password: string } | null;
  /** EVENTSTORE_PASSWORD set: the app's EventStoreDB user (EVENTSTORE_USER, by default the app's name). */
  eventStoreCredentials: { user: string; password: string } | null;
  /** How long an unreachable dependency is retried at start before the app gives up (exit 1). */
  startupTimeoutMs: number;
  /** After SIGTERM, how long work in flight may take before the process exits anyway. */
  shutdownGraceMs: number;
  /**
   * V8's old generation may grow to this much above what survived the last full collection before
   * the next one (0: V8's own factor, up to 4x under load). See heap-growth.ts.
   */
  heapGrowingPercent: number;
  /**
   * Checkpointed processors (relays, projections) run in one replica at a time, the holder of a
   * lease in the read store: it lasts `ttlMs` unless renewed every `renewMs`, so a dead holder's
   * processors are taken over within about ttlMs + renewMs.
   */
  processorLease: { ttlMs: number; renewMs: number };
  adminToken: string | null;
  /** 64 hex characters; seals webhook signing secrets at rest. */
  webhookSecretKey: string;
  /** 64 hex characters; keys the gateway's idempotency record ids and answer seals (HMAC). */
  idempotencySecretKey: string;
  /** connection-service: the token vault's keys, the OAuth callback's public origin, the refresh sweep. */
  connections: ConnectionSettings;
  /**
   * Webhook sending. `concurrency`: deliveries in flight per process; `endpointConcurrency`: of those,
   * at most this many to one endpoint, so one slow or failing partner never holds every lane.
   */
  webhook: {
    allowHttp: boolean;
    allowPrivateNetworks: boolean;
    timeoutMs: number;
    retrySchedule: number[];
    concurrency: number;
    endpointConcurrency: number;
    disableAfterMs: number;
  };
  executorConcurrency: number;
  /**
   * The longest launches may wait for their first try at the executor's pace before a launch is
   * refused (503, nothing charged): DISPATCH_BACKLOG_SECONDS (docs/api.md#dispatches-and-retries, "Overload").
   */
  dispatchBacklogSeconds: number;
  /**
   * How soon a launch whose process died is taken over by another replica (EXECUTOR_LEASE_MS):
   * while a try runs its message is kept, renewed every third of this.
   */
  executorLeaseMs: number;
  /** The longest a dispatch waits between tries, whatever delay a network names (LinkedIn's is "until midnight UTC"). */
  channelRetryMaxWaitMs: number;
  /** One call to an ad network (CHANNEL_TIMEOUT_MS, also read by the networks' settings): what a live try may take follows from it. */
  channelTimeoutMs: number;
  /** How long the gateway waits for a service's answer (BUS_REQUEST_TIMEOUT_MS). */
  requestTimeoutMs: number;
  /**
   * The same for the connection calls that reach an ad network (token import, reauthorization,
   * the OAuth callback: up to four calls of CHANNEL_TIMEOUT_MS each), at least requestTimeoutMs.
   */
  connectionRequestTimeoutMs: number;
  /** Gateway token bucket per API key (and per client IP without one): refill rate and bucket size. */
  rateLimit: { perSecond: number; burst: number };
  /**
   * The proxies (load balancers, ingress) whose `X-Forwarded-For` the gateway believes (TRUST_PROXY,
   * CIDRs): requests without a key are limited per client address, which behind them is the one
   * they report. Empty (the default): nobody's header is believed, the socket's peer counts.
   */
  trustProxy: string[];
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  version: string;
}

export interface ConnectionSettings {
  /** 64 hex characters; seals provider tokens at rest (AES-256-GCM). Empty in apps that hold no tokens. */
  encryptionKey: string;
  /** The key before a rotation: values it sealed are still opened, and sealed again with the new one on their next write. */
  previousEncryptionKey: string | null;
  /** Where partners and browsers reach the API; the OAuth callback is `${publicBaseUrl}/v1/connections/oauth/callback`. No trailing slash. */
  publicBaseUrl: string;
  /** How often active connections expiring within 10 minutes are refreshed. */
  refreshSweepMs: number;
}

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(true|1|yes)$/i.test(raw)) return true;
  if (/^(false|0|no)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be true or false, not "${raw}"`);
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new ConfigError(name, `must be a whole number from ${min} to ${max}, not "${raw}"`);
  return Number(raw);
}

/**
 * A server address. NATS_URL is a comma-separated list of URLs; EVENTSTORE_URL and MONGODB_URL are
 * each one connection string whose authority may list several hosts (`mongodb://a:27017,b:27017/db?replicaSet=rs0`,
 * `esdb://a:2113,b:2113,c:2113?tls=true`), as their drivers take them. Errors never repeat the value:
 * it may carry a password.
 */
function url(env: Env, name: string, schemes: string[], form: 'url-list' | 'multi-host'): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  const addresses = form === 'url-list' ? raw.split(',').map((p) => p.trim()) : [raw.trim()];
  for (const address of addresses) {
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(address)?.[1]?.toLowerCase();
    if (scheme === undefined) throw new ConfigError(name, `must be a URL such as ${schemes[0]}://host:port`);
    if (!schemes.includes(scheme)) throw new ConfigError(name, `must use ${schemes.join(' or ')}://, not "${scheme}://"`);
    const rest = address.slice(scheme.length + 3);
    const authority = rest.slice(0, rest.search(/[/?#]|$/));
    const hostList = authority.slice(authority.lastIndexOf('@') + 1);
    const hosts = form === 'url-list' ? [hostList] : hostList.split(',');
    for (const host of hosts) {
      let parsed: URL;
      try {
        parsed = new URL(`http://${host}`);
      } catch {
        throw new ConfigError(name, `has a host that is not host or host:port (as in ${schemes[0]}://host:port)`);
      }
      if (!parsed.hostname || parsed.pathname !== '/' || parsed.username || parsed.password)
        throw new ConfigError(name, `must name each host as host or host:port, as in ${schemes[0]}://host:port`);
    }
  }
  return raw;
}

/** A single duration such as `5d` or `90s` (the retry schedule's units). */
function duration(env: Env, name: string, fallback: string): number {
  const raw = env[name] || fallback;
  try {
    const steps = parseDurationList(raw);
    if (steps.length !== 1) throw new Error('must be one duration');
    return steps[0];
  } catch {
    throw new ConfigError(name, `must be one duration with a unit (ms, s, m, h, d), such as 5d, not "${raw}"`);
  }
}

const DEFAULT_PORTS: Record<AppName, number> = {
  standalone: 3000,
  'api-gateway': 3000,
  'dispatch-service': 3001,
  'connection-service': 3002,
  'webhook-delivery-service': 3003,
  'ops-cli': 0,
};

/** One apart per app like PORT, so the four apps run side by side on one machine as they are. */
const DEFAULT_METRICS_PORTS: Record<AppName, number> = {
  standalone: 9464,
  'api-gateway': 9464,
  'dispatch-service': 9465,
  'connection-service': 9466,
  'webhook-delivery-service': 9467,
  'ops-cli': 0,
};

/**
 * A key that seals secrets at rest. Only the standalone process (and the ops command line beside
 * it) may generate one into DATA_DIR; a service run on its own must be given it, so replicas agree.
 */
function secretKey(env: Env, name: string, app: AppName, dataDir: string): string {
  const raw = env[name];
  if (raw !== undefined && raw !== '') {
    if (!/^[0-9a-fA-F]{64}$/.test(raw)) throw new ConfigError(name, 'must be 32 bytes written as 64 hexadecimal characters');
    return raw.toLowerCase();
  }
  const file = join(dataDir, DATA_DIR_FILES.generatedKeys);
  const stored: Record<string, string> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  if (stored[name]) return stored[name];
  if (app !== 'standalone') throw new ConfigError(name, `is required (64 hexadecimal characters; generate one with: openssl rand -hex 32)`);
  stored[name] = randomBytes(32).toString('hex');
  writeFileSync(file, JSON.stringify(stored, null, 2), { mode: 0o600 });
  return stored[name];
}

/** A key the standalone process generated into DATA_DIR, if it did. */
function storedKey(dataDir: string, name: string): string | null {
  const file = join(dataDir, DATA_DIR_FILES.generatedKeys);
  return existsSync(file) ? ((JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>)[name] ?? null) : null;
}

/** An optional key in the same format (nothing is generated for it). */
function optionalSecretKey(env: Env, name: string): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  if (!/^[0-9a-fA-F]{64}$/.test(raw)) throw new ConfigError(name, 'must be 32 bytes written as 64 hexadecimal characters');
  return raw.toLowerCase();
}

/** A comma-separated list of IPv4 or IPv6 CIDRs (a bare address is its own /32 or /128). */
function cidrList(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((item) => {
    const cidr = item.trim();
    const [address, prefix, extra] = cidr.split('/');
    const family = isIP(address);
    const bits = prefix === undefined ? (family === 6 ? 128 : 32) : Number(prefix);
    if (
      !family ||
      extra !== undefined ||
      !Number.isInteger(bits) ||
      bits < 0 ||
      bits > (family === 6 ? 128 : 32) ||
      (prefix !== undefined && !/^\d+$/.test(prefix))
    )
      throw new ConfigError(name, `must be a comma-separated list of CIDRs such as 10.0.0.0/8,fd00::/8, not "${cidr}"`);
    return `${address}/${bits}`;
  });
}

/** <PREFIX>_USER (default: the app's name, `ops` for ops-cli) with <PREFIX>_PASSWORD, or null without a password. */
function credentialsOf(env: Env, prefix: 'NATS' | 'MONGODB' | 'EVENTSTORE', app: AppName): { user: string; password: string } | null {
  const password = env[`${prefix}_PASSWORD`] ?? '';
  const user = env[`${prefix}_USER`] || (app === 'ops-cli' ? 'ops' : app);
  if (password === '') {
    if (env[`${prefix}_USER`]) throw new ConfigError(`${prefix}_PASSWORD`, `is required with ${prefix}_USER (${user})`);
    return null;
  }
  // A NATS user names its inbox subject (_INBOX.<user>): one subject token.
  if (!/^[A-Za-z0-9_-]+$/.test(user)) throw new ConfigError(`${prefix}_USER`, `may only use letters, digits, '_' and '-', not "${user}"`);
  return { user, password };
}

/** The path of a file that must exist and be readable, or null when unset. */
function readableFile(env: Env, name: string): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  if (!existsSync(raw)) throw new ConfigError(name, `names a file that does not exist: ${raw}`);
  return raw;
}

/** An http(s) origin with an optional path prefix, kept without its trailing slash. */
function publicBaseUrl(env: Env, port: number): string {
  const raw = env.PUBLIC_BASE_URL;
  if (raw === undefined || raw === '') return `http://localhost:${port}`;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError('PUBLIC_BASE_URL', `must be a URL such as https://api.example.com, not "${raw}"`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    throw new ConfigError('PUBLIC_BASE_URL', `must use https:// (or http://), not "${parsed.protocol}"`);
  // People's browsers come back to it from the networks' consent pages with an authorization code in the query.
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(parsed.hostname);
  if (parsed.protocol === 'http:' && !loopback && env.CHANNEL_ALLOW_HTTP !== 'true')
    throw new ConfigError(
      'PUBLIC_BASE_URL',
      'must use https:// (http:// only for localhost, or with CHANNEL_ALLOW_HTTP=true for local development): the OAuth callback carries authorization codes',
    );
  if (parsed.search || parsed.hash || parsed.username || parsed.password)
    throw new ConfigError('PUBLIC_BASE_URL', 'must be an origin with an optional path, without query, fragment or credentials');
  return `${parsed.origin}${parsed.pathname}`.replace(/\/+$/, '');
}

/** The version in the root package.json, found from here in source and in dist alike. */
function packageVersion(): string {
  for (let dir = __dirname; dir !== resolve(dir, '..'); dir = resolve(dir, '..')) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'campaign-ops' && pkg.version) return pkg.version;
    }
  }
  return '0.0.0';
}

export function loadConfig(app: AppName, env: Env = process.env): ServiceConfig {
  const dataDir = resolve(env.DATA_DIR || './data');
  mkdirSync(dataDir, { recursive: true });
  let retrySchedule: number[];
  try {
    retrySchedule = parseDurationList(env.WEBHOOK_RETRY_SCHEDULE || DEFAULT_WEBHOOK_RETRY_SCHEDULE);
  } catch (error) {
    throw new ConfigError('WEBHOOK_RETRY_SCHEDULE', (error as Error).message);
  }
  const adminToken = env.ADMIN_TOKEN || null;
  if (adminToken !== null && adminToken.length < 16) throw new ConfigError('ADMIN_TOKEN', 'must have at least 16 characters');
  const logLevel = (env.LOG_LEVEL || 'info') as ServiceConfig['logLevel'];
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) throw new ConfigError('LOG_LEVEL', 'must be debug, info, warn or error');
  const needsWebhookKey = app === 'standalone' || app === 'webhook-delivery-service';
  const holdsTokens = app === 'standalone' || app === 'connection-service';
  const port = integer(env, 'PORT', DEFAULT_PORTS[app], 0, 65535);
  const metricsPort = integer(env, 'METRICS_PORT', DEFAULT_METRICS_PORTS[app], 1, 65535);
  if (app !== 'ops-cli' && metricsPort === port)
    throw new ConfigError('METRICS_PORT', `must differ from PORT (${port}): metrics are served on a port of their own`);
  const requestTimeoutMs = integer(env, 'BUS_REQUEST_TIMEOUT_MS', 10_000, 100, 120_000);
  const connectionRequestTimeoutMs = integer(env, 'BUS_CONNECTION_REQUEST_TIMEOUT_MS', 120_000, 1_000, 600_000);
  const leaseTtlMs = integer(env, 'PROCESSOR_LEASE_TTL_MS', 10_000, 1_000, 600_000);
  const leaseRenewMs = integer(env, 'PROCESSOR_LEASE_RENEW_MS', 3_000, 100, 300_000);
  if (leaseRenewMs * 2 > leaseTtlMs)
    throw new ConfigError(
      'PROCESSOR_LEASE_RENEW_MS',
      `must be at most half of PROCESSOR_LEASE_TTL_MS (${leaseTtlMs}), not ${leaseRenewMs}: a renewal may fail once without losing the lease`,
    );
  if (connectionRequestTimeoutMs < requestTimeoutMs)
    throw new ConfigError(
      'BUS_CONNECTION_REQUEST_TIMEOUT_MS',
      `must be at least BUS_REQUEST_TIMEOUT_MS (${requestTimeoutMs}), not ${connectionRequestTimeoutMs}`,
    );
  const natsCredentials = credentialsOf(env, 'NATS', app);
  return {
    app,
    port,
    metricsPort,
    dataDir,
    natsUrl: url(env, 'NATS_URL', ['nats', 'tls'], 'url-list'),
    natsStreamReplicas: integer(env, 'NATS_STREAM_REPLICAS', 1, 1, 5),
    natsCredentials,
    natsTlsCaFile: readableFile(env, 'NATS_TLS_CA_FILE'),
    natsManageStreams: boolean(env, 'NATS_MANAGE_STREAMS', natsCredentials === null || app === 'ops-cli'),
    eventStoreUrl: url(env, 'EVENTSTORE_URL', ['esdb', 'esdb+discover'], 'multi-host'),
    mongodbUrl: url(env, 'MONGODB_URL', ['mongodb', 'mongodb+srv'], 'multi-host'),
    mongodbCredentials: credentialsOf(env, 'MONGODB', app),
    eventStoreCredentials: credentialsOf(env, 'EVENTSTORE', app),
    startupTimeoutMs: integer(env, 'STARTUP_TIMEOUT_MS', 60_000, 0, 3_600_000),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 25_000, 0, 600_000),
    heapGrowingPercent: integer(env, 'HEAP_GROWING_PERCENT', 30, 0, 1_000),
    processorLease: { ttlMs: leaseTtlMs, renewMs: leaseRenewMs },
    adminToken,
    webhookSecretKey: needsWebhookKey ? secretKey(env, 'WEBHOOK_SECRET_KEY', app, dataDir) : '',
    idempotencySecretKey: app === 'standalone' || app === 'api-gateway' ? secretKey(env, 'IDEMPOTENCY_SECRET_KEY', app, dataDir) : '',
    connections: {
      // ops-cli: for `ops vault`, the key given or the standalone's generated one, if any.
      encryptionKey: holdsTokens
        ? secretKey(env, 'CONNECTION_ENCRYPTION_KEY', app, dataDir)
        : app === 'ops-cli'
          ? (optionalSecretKey(env, 'CONNECTION_ENCRYPTION_KEY') ?? storedKey(dataDir, 'CONNECTION_ENCRYPTION_KEY') ?? '')
          : '',
      previousEncryptionKey: holdsTokens || app === 'ops-cli' ? optionalSecretKey(env, 'CONNECTION_ENCRYPTION_KEY_PREVIOUS') : null,
      publicBaseUrl: publicBaseUrl(env, port),
      refreshSweepMs: integer(env, 'CONNECTION_REFRESH_SWEEP_MS', 60_000, 1_000, 86_400_000),
    },
    webhook: {
      allowHttp: boolean(env, 'WEBHOOK_ALLOW_HTTP', false),
      allowPrivateNetworks: boolean(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
      timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
      retrySchedule,
      concurrency: integer(env, 'WEBHOOK_CONCURRENCY', 64, 1, 256),
      endpointConcurrency: integer(env, 'WEBHOOK_ENDPOINT_CONCURRENCY', 16, 1, 256),
      disableAfterMs: duration(env, 'WEBHOOK_DISABLE_AFTER', '5d'),
    },
    executorConcurrency: integer(env, 'EXECUTOR_CONCURRENCY', 16, 1, 256),
    dispatchBacklogSeconds: integer(env, 'DISPATCH_BACKLOG_SECONDS', 30, 1, 3_600),
    executorLeaseMs: integer(env, 'EXECUTOR_LEASE_MS', 60_000, 1_000, 3_600_000),
    channelRetryMaxWaitMs: duration(env, 'CHANNEL_RETRY_MAX_WAIT', '15m'),
    channelTimeoutMs: integer(env, 'CHANNEL_TIMEOUT_MS', 30_000, 1, 600_000),
    requestTimeoutMs,
    connectionRequestTimeoutMs,
    rateLimit: {
      perSecond: integer(env, 'RATE_LIMIT_PER_SECOND', 100, 1, 1_000_000),
      burst: integer(env, 'RATE_LIMIT_BURST', 200, 1, 1_000_000),
    },
    trustProxy: cidrList(env, 'TRUST_PROXY'),
    logLevel,
    version: packageVersion(),
  };
}
