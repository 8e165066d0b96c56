/**
 * The test harness's own guarantee: an app whose port was taken between freePort() and its listen
 * (by a parallel test, or an outgoing connection's ephemeral port) starts on another one, when its
 * port is known nowhere else; a port named elsewhere stays, and the start fails saying why.
 */
import { createServer, Server, Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, ServiceProcess } from '../support/service-process';

describe('starting an app on a port someone took meanwhile', () => {
  let squatter: Server;
  const sockets: Socket[] = [];
  let taken: number;
  let dataDir: string;
  const started: ServiceProcess[] = [];

  beforeAll(async () => {
    taken = await freePort();
    // It accepts and never answers, as an unrelated holder of the port would.
    squatter = createServer((socket) => sockets.push(socket));
    await new Promise<void>((listening) => squatter.listen(taken, '127.0.0.1', listening));
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-port-'));
  });
  afterAll(async () => {
    await Promise.all(started.map((service) => service.stop()));
    for (const socket of sockets) socket.destroy();
    await new Promise((closed) => squatter.close(closed));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('moves to another free port when its port may move', async () => {
    const service = new ServiceProcess('standalone', taken, { DATA_DIR: join(dataDir, 'moves') }, true);
    started.push(service);
    await service.start();
    expect(service.port).not.toBe(taken);
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
  });

  it('fails, naming the port, when its port is known elsewhere', async () => {
    const service = new ServiceProcess('standalone', taken, { DATA_DIR: join(dataDir, 'stays') });
    started.push(service);
    await expect(service.start()).rejects.toThrow(/EADDRINUSE: address already in use 127\.0\.0\.1:\d+/);
  });
});
