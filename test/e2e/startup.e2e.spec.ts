/**
 * An app with a missing or malformed setting, or an unreachable dependency, stops at start with
 * a message that names the variable, and exits non-zero: never a half-started service.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PartnerClient } from '../support/partner-client';
import { freePort, ROOT, ServiceProcess } from '../support/service-process';

async function startFailing(app: string, env: Record<string, string>, timeoutMs = 20_000): Promise<{ code: number | null; output: string; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'apps', app, 'src', 'main.js')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(await freePort()), METRICS_PORT: String(await freePort()), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return { code, output, ms: Date.now() - started };
}

describe('start-up configuration', () => {
  let dataDir: string;
  let closedPort: number;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-startup-'));
    closedPort = await freePort();
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const base = () => ({ DATA_DIR: dataDir, NATS_URL: `nats://127.0.0.1:${closedPort}` });

  it.each([
    ['EVENTSTORE_URL', 'not a url'],
    ['EVENTSTORE_URL', 'http://eventstore:2113'],
    ['MONGODB_URL', 'postgres://db/x'],
    ['NATS_URL', 'nats:/'],
    ['WEBHOOK_RETRY_SCHEDULE', '5s,soon'],
    ['PORT', 'eighty'],
    ['METRICS_PORT', 'ninety'],
    ['WEBHOOK_ALLOW_HTTP', 'perhaps'],
  ])('refuses a malformed %s at once, naming it', async (variable, value) => {
    const result = await startFailing('dispatch-service', { ...base(), [variable]: value });
    expect(result.code).toBe(1);
    expect(result.output).toContain(variable);
    expect(result.ms).toBeLessThan(10_000);
  });

  it('refuses to run webhook-delivery-service without WEBHOOK_SECRET_KEY', async () => {
    const result = await startFailing('webhook-delivery-service', base());
    expect(result.code).toBe(1);
    expect(result.output).toContain('WEBHOOK_SECRET_KEY');
  });

  it('refuses an ADMIN_TOKEN shorter than 16 characters, naming it', async () => {
    const result = await startFailing('standalone', { DATA_DIR: join(dataDir, 'short-token'), ADMIN_TOKEN: 'x'.repeat(15) });
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/cannot start: ADMIN_TOKEN .*16/);
  });

  it('accepts an ADMIN_TOKEN of 16 characters exactly, and opens the Admin API to it', async () => {
    const token = 'y'.repeat(16);
    const service = await ServiceProcess.start('standalone', { DATA_DIR: join(dataDir, 'token-of-16'), ADMIN_TOKEN: token });
    try {
      const answer = await new PartnerClient(service.url, token).post('/admin/v1/accounts', { name: 'Sixteen' });
      expect([answer.status, answer.body.data?.name]).toEqual([200, 'Sixteen']);
    } finally {
      await service.stop();
    }
  });

  it('stops when METRICS_PORT is taken, naming it: metrics never move to another port', async () => {
    const blocker = createServer();
    const port = await new Promise<number>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as { port: number }).port)));
    try {
      const result = await startFailing('standalone', { DATA_DIR: join(dataDir, 'metrics-port-taken'), METRICS_PORT: String(port) });
      expect(result.code).toBe(1);
      expect(result.output).toContain(`cannot start: METRICS_PORT ${port} is already in use`);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it.each([
    ['EVENTSTORE_URL', (port: number) => `esdb://127.0.0.1:${port}?tls=false`],
    ['MONGODB_URL', (port: number) => `mongodb://127.0.0.1:${port}/campaign_ops`],
    ['NATS_URL', (port: number) => `nats://127.0.0.1:${port}`],
  ])('gives up on an unreachable %s after STARTUP_TIMEOUT_MS, naming it', async (variable, url) => {
    const result = await startFailing('dispatch-service', { ...base(), STARTUP_TIMEOUT_MS: '1500', [variable]: url(closedPort) });
    expect(result.code).toBe(1);
    expect(result.output).toMatch(new RegExp(`cannot start: ${variable} points at`));
    expect(result.ms).toBeLessThan(15_000);
  });
});
