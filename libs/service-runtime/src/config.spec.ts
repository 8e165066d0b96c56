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
      expect(config).toMatchObject({ shutdownGraceMs: 25_000, executorConcurrency: 16, webhook: expect.objectContaining({ timeoutMs: 10_000, concurrency: 16 }) });
    });

    it('reads each from its variable', () => {
      const config = load({ SHUTDOWN_GRACE_MS: '500', EXECUTOR_CONCURRENCY: '2', WEBHOOK_TIMEOUT_MS: '800', WEBHOOK_CONCURRENCY: '3' });
      expect(config).toMatchObject({ shutdownGraceMs: 500, executorConcurrency: 2, webhook: expect.objectContaining({ timeoutMs: 800, concurrency: 3 }) });
    });

    it.each([
      ['EXECUTOR_CONCURRENCY', '0'],
      ['WEBHOOK_CONCURRENCY', '0'],
      ['WEBHOOK_TIMEOUT_MS', '99'],
      ['SHUTDOWN_GRACE_MS', '-1'],
    ])('refuses %s=%s, naming it', (variable, value) => {
      expect((failure({ [variable]: value }) as Error).message).toMatch(new RegExp(`^${variable} `));
    });
  });
});
