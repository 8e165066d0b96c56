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

  describe('the webhook boundary', () => {
    it('keeps http and private networks refused unless turned on', () => {
      expect(load({}).webhook).toMatchObject({ allowHttp: false, allowPrivateNetworks: false });
      expect(load({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' }).webhook.allowPrivateNetworks).toBe(false);
      expect(load({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }).webhook).toMatchObject({ allowHttp: true, allowPrivateNetworks: true });
    });

    it('refuses a value that is neither true nor false, naming the variable', () => {
      expect((failure({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'maybe' }) as Error).message).toMatch(/^WEBHOOK_ALLOW_PRIVATE_NETWORKS /);
    });
  });

  describe('operational settings', () => {
    it('has the documented defaults', () => {
      const config = load({});
      expect(config).toMatchObject({ shutdownGraceMs: 25_000, executorConcurrency: 16, channelRetryMaxWaitMs: 900_000, channelTimeoutMs: 30_000, webhook: expect.objectContaining({ timeoutMs: 10_000, concurrency: 16 }) });
    });

    it('reads each from its variable', () => {
      const config = load({ SHUTDOWN_GRACE_MS: '500', EXECUTOR_CONCURRENCY: '2', CHANNEL_RETRY_MAX_WAIT: '90s', CHANNEL_TIMEOUT_MS: '45000', WEBHOOK_TIMEOUT_MS: '800', WEBHOOK_CONCURRENCY: '3' });
      expect(config).toMatchObject({ shutdownGraceMs: 500, executorConcurrency: 2, channelRetryMaxWaitMs: 90_000, channelTimeoutMs: 45_000, webhook: expect.objectContaining({ timeoutMs: 800, concurrency: 3 }) });
    });

    it.each([
      ['EXECUTOR_CONCURRENCY', '0'],
      ['WEBHOOK_CONCURRENCY', '0'],
      ['WEBHOOK_TIMEOUT_MS', '99'],
      ['SHUTDOWN_GRACE_MS', '-1'],
      ['CHANNEL_RETRY_MAX_WAIT', 'soon'],
      ['CHANNEL_TIMEOUT_MS', '0'],
    ])('refuses %s=%s, naming it', (variable, value) => {
      expect((failure({ [variable]: value }) as Error).message).toMatch(new RegExp(`^${variable} `));
    });
  });
  describe('how long the gateway waits for a service', () => {
    it('waits 10 s by default, and 120 s on the connection calls that reach an ad network', () => {
      expect(load({})).toMatchObject({ requestTimeoutMs: 10_000, connectionRequestTimeoutMs: 120_000 });
      expect(load({ BUS_REQUEST_TIMEOUT_MS: '5000', BUS_CONNECTION_REQUEST_TIMEOUT_MS: '180000' })).toMatchObject({ requestTimeoutMs: 5_000, connectionRequestTimeoutMs: 180_000 });
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
    const loadFor = (app: 'connection-service' | 'standalone' | 'dispatch-service', env: Record<string, string>, dir = dataDir) => loadConfig(app, { DATA_DIR: dir, ...env });
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
      expect(refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, CONNECTION_ENCRYPTION_KEY_PREVIOUS: 'xyz' })).message).toMatch(/^CONNECTION_ENCRYPTION_KEY_PREVIOUS must be 32 bytes/);
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
      expect(loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, PUBLIC_BASE_URL: 'https://api.example.com/' }).connections.publicBaseUrl).toBe('https://api.example.com');
      expect(refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, PUBLIC_BASE_URL: 'ftp://x' })).message).toMatch(/^PUBLIC_BASE_URL /);
      expect(refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, PUBLIC_BASE_URL: 'not a url' })).message).toMatch(/^PUBLIC_BASE_URL /);
      expect(refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, PUBLIC_BASE_URL: 'https://api.example.com/v1?x=1' })).message).toMatch(/^PUBLIC_BASE_URL /);
    });

    it('sweeps for tokens to refresh every minute unless told otherwise', () => {
      expect(loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key }).connections.refreshSweepMs).toBe(60_000);
      expect(loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, CONNECTION_REFRESH_SWEEP_MS: '5000' }).connections.refreshSweepMs).toBe(5000);
      expect(refusal(() => loadFor('connection-service', { CONNECTION_ENCRYPTION_KEY: key, CONNECTION_REFRESH_SWEEP_MS: '10' })).message).toMatch(/^CONNECTION_REFRESH_SWEEP_MS /);
    });
  });
});
