import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo, connect, Socket } from 'node:net';
import { AccountDirectory } from '@campaign-ops/accounts';
import { LaunchFastPath } from './launch-fast-path';
import { LaunchRoute } from './launch-route';
import { RateLimitMiddleware } from './rate-limit.middleware';

const BODY = JSON.stringify({ channel: 'google_ads' });

/** A loopback server with the fast path ahead of a stand-in for express, and what each of them got. */
async function serverWithFastPath() {
  const seen = { express: [] as string[], answered: [] as unknown[], serverSocketsClosed: 0 };
  const server: Server = createServer((request: IncomingMessage, response) => {
    seen.express.push(`${request.method} ${request.url}`);
    response.end('express');
  });
  server.on('connection', (socket: Socket) => socket.on('close', () => seen.serverSocketsClosed++));
  const directory = { authenticate: async () => ({ ok: true, accountId: 'acct_1', mode: 'test', keyId: 'key_1' }) } as unknown as AccountDirectory;
  const limits = { takeForKey: () => ({ allowed: true }) } as unknown as RateLimitMiddleware;
  const route = {
    acceptsBody: () => true,
    answer: async (request: IncomingMessage & { body: unknown }, response: { send(body: string): void }) => {
      seen.answered.push(request.body);
      response.send('{"launched":true}');
    },
  } as unknown as LaunchRoute;
  new LaunchFastPath(directory, limits, route).install(server);
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return { server, seen, port: (server.address() as AddressInfo).port };
}

const headers = (length: number) =>
  `POST /v1/campaigns HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer mk_test_x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
};

describe('LaunchFastPath on a real server', () => {
  let running: Awaited<ReturnType<typeof serverWithFastPath>>;
  beforeEach(async () => (running = await serverWithFastPath()));
  afterEach(() => new Promise<void>((closed) => running.server.close(() => closed())));

  it('answers a whole launch itself, express untouched', async () => {
    const response = await fetch(`http://127.0.0.1:${running.port}/v1/campaigns`, {
      method: 'POST',
      headers: { Authorization: 'Bearer mk_test_x', 'Content-Type': 'application/json' },
      body: BODY,
    });
    expect(await response.text()).toBe('{"launched":true}');
    expect(running.seen).toMatchObject({ express: [], answered: [{ channel: 'google_ads' }] });
  });

  it('given a client gone mid-body, closes the request: no launch, and nothing handed to express to read from the consumed body', async () => {
    const client = connect(running.port, '127.0.0.1');
    await new Promise((connected) => client.once('connect', connected));
    client.write(headers(BODY.length) + BODY.slice(0, 10));
    await new Promise((r) => setTimeout(r, 50));
    client.destroy();
    await until(() => running.seen.serverSocketsClosed === 1);
    // The failed body read settles after the socket's close: give it its turns.
    await new Promise((r) => setTimeout(r, 50));
    expect(running.seen).toEqual({ express: [], answered: [], serverSocketsClosed: 1 });
  });
});
