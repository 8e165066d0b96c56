/**
 * `npm run receiver` (scripts/webhook-receiver.js) alone, against a stand-in for the API: it
 * registers itself for every event type, verifies each delivery's signature with the secret it was
 * given, hints at the settings a refused URL needs, and deletes its endpoint when it is stopped.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { WEBHOOK_EVENT_TYPES } from '@campaign-ops/webhook-domain';
import { eventually } from '../support/partner-client';
import { freePort, ROOT } from '../support/service-process';

const KEY = 'mk_test_0123456789abcdefghijklmnopqrstuv';
const SECRET = 'whsec_receiverSpecSecret0123456789abcdef';
const WAIT_MS = 10_000;

interface ApiRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: unknown;
}

/** The webhook routes of the API, as far as the receiver uses them; `refuse` answers POST with that code. */
async function startApi(refuse?: string): Promise<{ url: string; requests: ApiRequest[]; server: Server }> {
  const requests: ApiRequest[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString();
      const body = raw ? JSON.parse(raw) : undefined;
      requests.push({ method: request.method!, path: request.url!, authorization: request.headers.authorization, body });
      const answer = (status: number, payload: unknown) => response.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(payload));
      if (request.method === 'POST' && refuse) return answer(400, { success: false, error: { code: refuse, message: 'The URL must use https.' } });
      if (request.method === 'POST')
        return answer(200, { success: true, data: { id: 'whk_receiver', url: body.url, events: body.events, enabled: true, signing_secret: SECRET } });
      if (request.method === 'DELETE') return answer(200, { success: true, data: { id: 'whk_receiver', deleted: true } });
      answer(404, { success: false, error: { code: 'not_found', message: 'Not found.' } });
    });
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, requests, server };
}

class Receiver {
  private text = '';
  readonly exited: Promise<{ code: number | null; signal: string | null }>;

  constructor(
    readonly child: ChildProcess,
    readonly port: number,
  ) {
    child.stdout!.on('data', (chunk: Buffer) => (this.text += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.text += chunk.toString()));
    this.exited = new Promise((done) => child.once('exit', (code, signal) => done({ code, signal })));
  }

  /** `npm run receiver -- <args>` in its own process group (a terminal's job), or the script itself. */
  static async start(args: string[], via: 'npm' | 'node'): Promise<Receiver> {
    const port = await freePort();
    const all = [...args, '--port', String(port)];
    const command = via === 'npm' ? ['npm', ['run', 'receiver', '--', ...all]] : [process.execPath, ['scripts/webhook-receiver.js', ...all]];
    const child = spawn(command[0] as string, command[1] as string[], {
      cwd: ROOT,
      detached: true,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), npm_config_update_notifier: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new Receiver(child, port);
  }

  output(): string {
    return this.text;
  }

  async ready(): Promise<void> {
    await eventually(async () => (await fetch(`http://127.0.0.1:${this.port}/`)).status === 200, WAIT_MS, 'the receiver to be ready').catch((error: Error) => {
      throw new Error(`${error.message}; its output:\n${this.text}`);
    });
  }

  /** POSTs a delivery as the service sends it; `signature` replaces the right one. */
  async deliver(body: object, signature?: string | null): Promise<number> {
    const raw = JSON.stringify(body);
    const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-SERVICE-Event': (body as { event: string }).event };
    const value = signature === undefined ? `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}` : signature;
    if (value !== null) headers['X-SERVICE-Signature'] = value;
    const response = await fetch(`http://127.0.0.1:${this.port}/webhooks`, { method: 'POST', headers, body: raw });
    return response.status;
  }

  async stoppedBy(signal: NodeJS.Signals, to: 'group' | 'process'): Promise<{ code: number | null; signal: string | null }> {
    process.kill(to === 'group' ? -this.child.pid! : this.child.pid!, signal);
    const timeout = new Promise<'still running'>((done) => setTimeout(() => done('still running'), WAIT_MS).unref());
    return Promise.race([this.exited, timeout]) as Promise<{ code: number | null; signal: string | null }>;
  }

  kill(): void {
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

const completed = {
  id: 'evt_receiver1',
  event: 'dispatch.completed',
  timestamp: '2026-11-29T09:00:00.000Z',
  data: { dispatch_id: 'dsp_receiver1', channel: 'meta_ads', status: 'completed', provider_resource_id: 'sbx_meta_ads_1' },
};

describe('npm run receiver', () => {
  const receivers: Receiver[] = [];
  const apis: Server[] = [];
  const started = async (args: string[], via: 'npm' | 'node') => {
    const receiver = await Receiver.start(args, via);
    receivers.push(receiver);
    return receiver;
  };
  const api = async (refuse?: string) => {
    const started = await startApi(refuse);
    apis.push(started.server);
    return started;
  };

  afterAll(async () => {
    for (const receiver of receivers) receiver.kill();
    await Promise.all(apis.map((server) => new Promise((closed) => server.close(closed))));
  });

  it('registers for every event type, verifies signatures, and deletes its endpoint on Ctrl-C', async () => {
    const service = await api();
    const receiver = await started(['--key', KEY, '--api', service.url], 'npm');
    await receiver.ready();
    expect(service.requests).toEqual([
      {
        method: 'POST',
        path: '/v1/webhooks',
        authorization: `Bearer ${KEY}`,
        body: { url: `http://127.0.0.1:${receiver.port}/webhooks`, events: [...WEBHOOK_EVENT_TYPES] },
      },
    ]);

    expect(await receiver.deliver(completed)).toBe(204);
    expect(await receiver.deliver(completed, `sha256=${'0'.repeat(64)}`)).toBe(401);
    expect(await receiver.deliver(completed, null)).toBe(401);
    const lines = receiver.output().split('\n');
    expect(lines).toContain('dispatch.completed  evt_receiver1  dsp_receiver1 completed  signature verified');
    expect(lines.filter((line) => line === 'dispatch.completed  evt_receiver1  dsp_receiver1 completed  signature INVALID')).toHaveLength(2);
    expect(receiver.output()).toContain('whsec_rece…');
    expect(receiver.output()).not.toContain(SECRET);

    // Ctrl-C signals npm and node together, and npm forwards it again: one stop, one DELETE.
    expect(await receiver.stoppedBy('SIGINT', 'group')).toEqual({ code: 0, signal: null });
    expect(service.requests.slice(1)).toEqual([{ method: 'DELETE', path: '/v1/webhooks/whk_receiver', authorization: `Bearer ${KEY}`, body: undefined }]);
    expect(receiver.output()).toContain('deleted endpoint whk_receiver');
  });

  it('with --secret, verifies deliveries to an endpoint made elsewhere and registers nothing', async () => {
    const service = await api();
    const receiver = await started(['--secret', SECRET, '--api', service.url], 'node');
    await receiver.ready();
    expect(await receiver.deliver(completed)).toBe(204);
    expect(await receiver.deliver({ ...completed, id: 'evt_receiver2' }, `sha256=${createHmac('sha256', 'whsec_other').update('{}').digest('hex')}`)).toBe(401);
    expect(receiver.output()).toContain('dispatch.completed  evt_receiver1  dsp_receiver1 completed  signature verified');
    expect(receiver.output()).toContain('dispatch.completed  evt_receiver2  dsp_receiver1 completed  signature INVALID');
    expect(await receiver.stoppedBy('SIGTERM', 'process')).toEqual({ code: 0, signal: null });
    expect(service.requests).toEqual([]);
  });

  it('says which settings a local URL needs when the service refuses it', async () => {
    const service = await api('url_not_https');
    const receiver = await started(['--key', KEY, '--api', service.url], 'node');
    const timeout = new Promise<'still running'>((done) => setTimeout(() => done('still running'), WAIT_MS).unref());
    expect(await Promise.race([receiver.exited, timeout])).toEqual({ code: 1, signal: null });
    expect(receiver.output()).toContain('url_not_https');
    expect(receiver.output()).toContain('WEBHOOK_ALLOW_HTTP=true WEBHOOK_ALLOW_PRIVATE_NETWORKS=true');
  });
});
