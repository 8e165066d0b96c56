import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './config';

describe('loadConfig', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-config-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const load = (env: Record<string, string>) => loadConfig('dispatch-service', { DATA_DIR: dataDir, ...env });
  const failure = (env: Record<string, string>) => {
    try {
      load(env);
    } catch (error) {
      return error;
    }
    throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
  };

  describe('credentials of the bus and the stores', () => {
    it('signs in as nobody without a password, and manages the streams itself then', () => {
      const config = load({});
      expect([config.natsCredentials, config.mongodbCredentials, config.eventStoreCredentials, config.natsManageStreams]).toEqual([null, null, null, true]);
    });

    it.each(['NATS', 'MONGODB', 'EVENTSTORE'])("signs in to %s as the app's own user by default, or as <PREFIX>_USER", (prefix) => {
      const field = { NATS: 'natsCredentials', MONGODB: 'mongodbCredentials', EVENTSTORE: 'eventStoreCredentials' }[prefix] as 'natsCredentials';
      expect(load({ [`${prefix}_PASSWORD`]: 'secret' })[field]).toEqual({ user: 'dispatch-service', password: 'secret' });
      expect(load({ [`${prefix}_USER`]: 'someone', [`${prefix}_PASSWORD`]: 'secret' })[field]).toEqual({ user: 'someone', password: 'secret' });
      expect(loadConfig('ops-cli', { DATA_DIR: dataDir, [`${prefix}_PASSWORD`]: 'secret' })[field]).toEqual({ user: 'ops', password: 'secret' });
      expect((failure({ [`${prefix}_USER`]: 'someone' }) as ConfigError).message).toMatch(new RegExp(`${prefix}_PASSWORD.*required with ${prefix}_USER`));
    });

    it('leaves the streams to the operators once the app has a NATS user, unless told otherwise; ops-cli always manages them', () => {
      expect(load({ NATS_PASSWORD: 'p' }).natsManageStreams).toBe(false);
      expect(load({ NATS_PASSWORD: 'p', NATS_MANAGE_STREAMS: 'true' }).natsManageStreams).toBe(true);
      expect(loadConfig('ops-cli', { DATA_DIR: dataDir, NATS_PASSWORD: 'p' }).natsManageStreams).toBe(true);
    });

    it('refuses a NATS user that is not one subject token (it names the inbox), and a CA file that does not exist', () => {
      expect((failure({ NATS_USER: 'a.b', NATS_PASSWORD: 'p' }) as ConfigError).message).toMatch(/NATS_USER may only use/);
      expect((failure({ NATS_TLS_CA_FILE: join(dataDir, 'missing.pem') }) as ConfigError).message).toMatch(/NATS_TLS_CA_FILE names a file that does not exist/);
      expect(load({ NATS_TLS_CA_FILE: __filename }).natsTlsCaFile).toBe(__filename);
    });
  });

  describe('ADMIN_TOKEN', () => {
    it('leaves the Admin API off when unset or empty', () => {
      expect(load({}).adminToken).toBeNull();
      expect(load({ ADMIN_TOKEN: '' }).adminToken).toBeNull();
    });

    it('refuses a token shorter than 16 characters, naming the variable', () => {
      const error = failure({ ADMIN_TOKEN: 'x'.repeat(15) });
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/^ADMIN_TOKEN .*16/);
    });

    it('accepts 16 characters exactly, and keeps the token as given', () => {
      expect(load({ ADMIN_TOKEN: 'a'.repeat(16) }).adminToken).toBe('a'.repeat(16));
    });
  });

  describe('server addresses', () => {
    it('takes the multi-host connection strings of MongoDB replica sets and EventStoreDB clusters as their drivers do', () => {
      const mongo = 'mongodb://ops:s3cret@mongo-0.mongo:27017,mongo-1.mongo:27017,mongo-2.mongo:27017/campaign_ops?replicaSet=rs0&authSource=admin';
      const esdb = 'esdb://es-0:2113,es-1:2113,es-2:2113?tls=true&nodePreference=leader';
      const config = load({ MONGODB_URL: mongo, EVENTSTORE_URL: esdb, NATS_URL: 'nats://n-0:4222, nats://n-1:4222' });
      expect(config).toMatchObject({ mongodbUrl: mongo, eventStoreUrl: esdb, natsUrl: 'nats://n-0:4222, nats://n-1:4222' });
      expect(load({ MONGODB_URL: 'mongodb+srv://ops:pw@cluster0.example.net/db', EVENTSTORE_URL: 'esdb+discover://es.example.net:2113' })).toMatchObject({
        mongodbUrl: expect.any(String),
        eventStoreUrl: expect.any(String),
      });
      expect(load({ EVENTSTORE_URL: 'esdb://[::1]:2113,[fd00::2]:2113' }).eventStoreUrl).toBe('esdb://[::1]:2113,[fd00::2]:2113');
    });

    it.each([
      ['MONGODB_URL', 'postgres://db:5432', /^MONGODB_URL must use mongodb or mongodb\+srv/],
      ['MONGODB_URL', 'mongodb://a:27017,,b:27017/db', /^MONGODB_URL .*host/],
      ['MONGODB_URL', 'mongo-0:27017', /^MONGODB_URL must be a URL/],
      ['EVENTSTORE_URL', 'esdb://es-0:2113,es-1:notaport', /^EVENTSTORE_URL .*host/],
      ['NATS_URL', 'nats://n-0:4222,n-1:4222', /^NATS_URL must be a URL/],
    ])('refuses %s=%s, naming the variable', (name, value, message) => {
      expect((failure({ [name]: value }) as Error).message).toMatch(message);
    });

    it('never repeats a password from a refused address', () => {
      for (const value of ['mongodb://ops:s3cret@a:27017,b:x/db', 'ftp://ops:s3cret@a', 'mongodb://ops:s3cret@/db']) {
        expect((failure({ MONGODB_URL: value }) as Error).message).not.toContain('s3cret');
      }
    });
  });

  describe('the webhook boundary', () => {
    it('keeps http and private networks refused unless turned on', () => {
      expect(load({}).webhook).toMatchObject({ allowHttp: false, allowPrivateNetworks: false });
      expect(load({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' }).webhook.allowPrivateNetworks).toBe(false);
      expect(load({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }).webhook).toMatchObject({
        allowHttp: true,
        allowPrivateNetworks: true,
      });
    });

    it('refuses a value that is neither true nor false, naming the variable', () => {
      expect((failure({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'maybe' }) as Error).message).toMatch(/^WEBHOOK_ALLOW_PRIVATE_NETWORKS /);
    });
  });

  describe('operational settings', () => {
    it('has the documented defaults', () => {
      const config = load({});
      expect(config).toMatchObject({
        shutdownGraceMs: 25_000,
        heapGrowingPercent: 30,
        executorConcurrency: 16,
        dispatchBacklogSeconds: 30,
        executorLeaseMs: 60_000,
        channelRetryMaxWaitMs: 900_000,
        channelTimeoutMs: 30_000,
        webhook: expect.objectContaining({ timeoutMs: 10_000, concurrency: 64, endpointConcurrency: 16 }),
      });
    });

    it('reads each from its variable', () => {
      const config = load({
        SHUTDOWN_GRACE_MS: '500',
        EXECUTOR_CONCURRENCY: '2',
        DISPATCH_BACKLOG_SECONDS: '5',
        EXECUTOR_LEASE_MS: '5000',
        CHANNEL_RETRY_MAX_WAIT: '90s',
        CHANNEL_TIMEOUT_MS: '45000',
        WEBHOOK_TIMEOUT_MS: '800',
        WEBHOOK_CONCURRENCY: '3',
        WEBHOOK_ENDPOINT_CONCURRENCY: '2',
      });
      expect(config).toMatchObject({
        shutdownGraceMs: 500,
        executorConcurrency: 2,
        dispatchBacklogSeconds: 5,
        executorLeaseMs: 5_000,
        channelRetryMaxWaitMs: 90_000,
        channelTimeoutMs: 45_000,
        webhook: expect.objectContaining({ timeoutMs: 800, concurrency: 3, endpointConcurrency: 2 }),
      });
    });

    it('reads TRUST_PROXY as CIDRs (a bare address its own /32 or /128), none by default, and refuses anything else naming it', () => {
      expect(load({}).trustProxy).toEqual([]);
      expect(load({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.7 ,fd00::/8' }).trustProxy).toEqual(['10.0.0.0/8', '192.168.1.7/32', 'fd00::/8']);
      for (const bad of ['10.0.0.0/33', 'proxy.internal', '10.0.0.0/8/1', 'fd00::/129', '10.0.0.0/x'])
        expect((failure({ TRUST_PROXY: bad }) as Error).message).toMatch(/^TRUST_PROXY /);
    });

    it.each([
      ['EXECUTOR_CONCURRENCY', '0'],
      ['DISPATCH_BACKLOG_SECONDS', '0'],
      ['EXECUTOR_LEASE_MS', '999'],
      ['WEBHOOK_CONCURRENCY', '0'],
      ['WEBHOOK_ENDPOINT_CONCURRENCY', '0'],
      ['WEBHOOK_ENDPOINT_CONCURRENCY', '4.5'],
      ['WEBHOOK_TIMEOUT_MS', '99'],
      ['SHUTDOWN_GRACE_MS', '-1'],
      ['CHANNEL_RETRY_MAX_WAIT', 'soon'],
      ['CHANNEL_TIMEOUT_MS', '0'],
    ])('refuses %s=%s, naming it', (variable, value) => {
      expect((failure({ [variable]: value }) as Error).message).toMatch(new RegExp(`^${variable} `));
    });
  });
  describe('METRICS_PORT', () => {
    it("defaults to one port per app beside PORT's (9464 gateway and standalone, 9465 dispatch, 9466 connection, 9467 webhook delivery)", () => {
      const given = {
        DATA_DIR: dataDir,
        WEBHOOK_SECRET_KEY: '0'.repeat(64),
        IDEMPOTENCY_SECRET_KEY: '1'.repeat(64),
        CONNECTION_ENCRYPTION_KEY: '2'.repeat(64),
      };
      const ports = (['standalone', 'api-gateway', 'dispatch-service', 'connection-service', 'webhook-delivery-service'] as const).map((app) => [
        app,
        loadConfig(app, given).metricsPort,
        loadConfig(app, given).port,
      ]);
      expect(ports).toEqual([
        ['standalone', 9464, 3000],
        ['api-gateway', 9464, 3000],
        ['dispatch-service', 9465, 3001],
        ['connection-service', 9466, 3002],
        ['webhook-delivery-service', 9467, 3003],
      ]);
    });

    it('reads it from its variable', () => {
      expect(load({ METRICS_PORT: '19464' }).metricsPort).toBe(19464);
    });

    it.each(['0', '65536', '-1', '94.64', 'metrics'])('refuses METRICS_PORT=%s, naming it', (value) => {
      expect((failure({ METRICS_PORT: value }) as Error).message).toMatch(/^METRICS_PORT must be a whole number from 1 to 65535/);
    });

    it('refuses the API port: metrics are never served where the API is', () => {
      expect((failure({ PORT: '8080', METRICS_PORT: '8080' }) as Error).message).toMatch(/^METRICS_PORT must differ from PORT \(8080\)/);
      expect((failure({ METRICS_PORT: '3001' }) as Error).message).toMatch(/^METRICS_PORT must differ from PORT \(3001\)/);
    });
  });

  describe('processor leases', () => {
    it('last 10 s, renewed every 3 s, by default; read from PROCESSOR_LEASE_TTL_MS and PROCESSOR_LEASE_RENEW_MS', () => {
      expect(load({}).processorLease).toEqual({ ttlMs: 10_000, renewMs: 3_000 });
      expect(load({ PROCESSOR_LEASE_TTL_MS: '4000', PROCESSOR_LEASE_RENEW_MS: '1000' }).processorLease).toEqual({ ttlMs: 4_000, renewMs: 1_000 });
    });

    it('refuses a renewal interval above half the TTL (one failed renewal would lose the lease), and TTLs out of range', () => {
      expect((failure({ PROCESSOR_LEASE_TTL_MS: '4000', PROCESSOR_LEASE_RENEW_MS: '2500' }) as Error).message).toMatch(
        /^PROCESSOR_LEASE_RENEW_MS must be at most half of PROCESSOR_LEASE_TTL_MS \(4000\)/,
      );
      expect((failure({ PROCESSOR_LEASE_TTL_MS: '500' }) as Error).message).toMatch(/^PROCESSOR_LEASE_TTL_MS must be a whole number from 1000/);
    });
  });

  describe('how long the gateway waits for a service', () => {
    it('waits 10 s by default, and 120 s on the connection calls that reach an ad network', () => {
      expect(load({})).toMatchObject({ requestTimeoutMs: 10_000, connectionRequestTimeoutMs: 120_000 });
      expect(load({ BUS_REQUEST_TIMEOUT_MS: '5000', BUS_CONNECTION_REQUEST_TIMEOUT_MS: '180000' })).toMatchObject({
        requestTimeoutMs: 5_000,
        connectionRequestTimeoutMs: 180_000,
      });
    });

    it.each([['soon'], ['0'], ['600001']])('refuses BUS_CONNECTION_REQUEST_TIMEOUT_MS=%s, naming it', (value) => {
      expect((failure({ BUS_CONNECTION_REQUEST_TIMEOUT_MS: value }) as Error).message).toMatch(/^BUS_CONNECTION_REQUEST_TIMEOUT_MS /);
    });

    it('refuses a connection timeout shorter than BUS_REQUEST_TIMEOUT_MS, naming both', () => {
      const message = (failure({ BUS_REQUEST_TIMEOUT_MS: '30000', BUS_CONNECTION_REQUEST_TIMEOUT_MS: '20000' }) as Error).message;
      expect(message).toMatch(/^BUS_CONNECTION_REQUEST_TIMEOUT_MS .*BUS_REQUEST_TIMEOUT_MS/);
    });
  });

  describe('connection-service settings', () => {
    const key = 'a'.repeat(64);
    const loadFor = (app: 'connection-service' | 'standalone' | 'dispatch-service', env: Record<string, string>, dir = dataDir) =>
      loadConfig(app, { DATA_DIR: dir, ...env });
    const refusal = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return error as Error;
      }
      throw new Error('accepted');
    };

    it('refuses to start connection-service without CONNECTION_ENCRYPTION_KEY, naming it', () => {
      const error = refusal(() => loadFor('connection-service', {}, mkdtempSync(join(tmpdir(), 'campaign-ops-config-'))));
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toMatch(/^CONNECTION_ENCRYPTION_KEY is required/);
    });

    it('refuses a key that is not 64 hexadecimal characters, and a previous key likewise', () => {
      expect(refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: 'abc' })).message).toMatch(/^CONNECTION_ENCRYPTION_KEY must be 32 bytes/);
      expect(refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, CONNECTION_ENCRYPTION_KEY_PREVIOUS: 'xyz' })).message).toMatch(
        /^CONNECTION_ENCRYPTION_KEY_PREVIOUS must be 32 bytes/,
      );
    });

    it('takes the key and the previous one as given (lowercase)', () => {
      const config = loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key.toUpperCase(), CONNECTION_ENCRYPTION_KEY_PREVIOUS: 'b'.repeat(64) });
      expect(config.connections).toMatchObject({ encryptionKey: key, previousEncryptionKey: 'b'.repeat(64) });
      expect(loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key }).connections.previousEncryptionKey).toBeNull();
    });

    it('has the standalone process generate one into DATA_DIR, and keep it across starts', () => {
      const dir = mkdtempSync(join(tmpdir(), 'campaign-ops-config-'));
      const first = loadFor('standalone', {}, dir).connections.encryptionKey;
      expect(first).toMatch(/^[0-9a-f]{64}$/);
      expect(loadFor('standalone', {}, dir).connections.encryptionKey).toBe(first);
      // connection-service started later on the same DATA_DIR finds it too
      expect(loadFor('connection-service', {}, dir).connections.encryptionKey).toBe(first);
    });

    it('needs no key where no connection is handled', () => {
      expect(loadFor('dispatch-service', {}).connections.encryptionKey).toBe('');
    });

    it('builds the OAuth callback on PUBLIC_BASE_URL, by default localhost on PORT', () => {
      expect(loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key }).connections.publicBaseUrl).toBe('http://localhost:3002');
      expect(loadFor('standalone', { PORT: '4100' }).connections.publicBaseUrl).toBe('http://localhost:4100');
      expect(loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, PUBLIC_BASE_URL: 'https://api.example.com/' }).connections.publicBaseUrl).toBe(
        'https://api.example.com',
      );
      expect(refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, PUBLIC_BASE_URL: 'ftp://x' })).message).toMatch(/^PUBLIC_BASE_URL /);
      expect(refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, PUBLIC_BASE_URL: 'not a url' })).message).toMatch(
        /^PUBLIC_BASE_URL /,
      );
      expect(
        refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, PUBLIC_BASE_URL: 'https://api.example.com/v1?x=1' })).message,
      ).toMatch(/^PUBLIC_BASE_URL /);
      // Authorization codes come back on it: https, but for localhost or local development.
      expect(refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, PUBLIC_BASE_URL: 'http://api.example.com' })).message).toMatch(
        /^PUBLIC_BASE_URL must use https/,
      );
      expect(
        loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, PUBLIC_BASE_URL: 'http://api.example.com', CHANNEL_ALLOW_HTTP: 'true' }).connections
          .publicBaseUrl,
      ).toBe('http://api.example.com');
      expect(loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, PUBLIC_BASE_URL: 'http://127.0.0.1:3000' }).connections.publicBaseUrl).toBe(
        'http://127.0.0.1:3000',
      );
    });

    it('sweeps for tokens to refresh every minute unless told otherwise', () => {
      expect(loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key }).connections.refreshSweepMs).toBe(60_000);
      expect(loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, CONNECTION_REFRESH_SWEEP_MS: '5000' }).connections.refreshSweepMs).toBe(5000);
      expect(refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, CONNECTION_REFRESH_SWEEP_MS: '10' })).message).toMatch(
        /^CONNECTION_REFRESH_SWEEP_MS /,
      );
    });
  });
});
