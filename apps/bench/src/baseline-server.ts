/**
 * The baselines, each run as its own process by the bench (like the service) so the client and
 * the server do not share one event loop. Listens on an ephemeral port of 127.0.0.1 and tells the
 * parent which one over IPC.
 *
 *   BASELINE=express  the least an Express app can do for our request: a JSON body parsed and
 *                     `{ok:true}` answered (what the gateway is compared with)
 *   BASELINE=http     bare node:http, the body read and `{"ok":true}` answered: no framework at
 *                     all, to show how far the bench's own client can drive a server
 *   BASELINE=floor    the least a launch must do on this machine, with no framework: the body
 *                     parsed, the launch appended to a SQLite file (WAL, synchronous = FULL, one
 *                     commit per turn of the event loop, as the service's stores), answered; then
 *                     its outcome and its delivery written, its dispatch.completed signed
 *                     (HMAC-SHA256) and POSTed over a keep-alive HTTPS pool to FLOOR_WEBHOOK_URL
 *                     (FLOOR_SECRET), and the delivery's outcome written: the three durable steps
 *                     and the one request out that every launch needs. No auth, ledger, read
 *                     models, bus or retries: a floor under the service's CPU per launch, not a service
 */
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import express from 'express';
import { Agent, request as undiciRequest } from 'undici';
import { GroupCommit } from '@campaign-ops/sqlite-wal';

function expressServer(): Server {
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: '100kb' }));
  app.post('/v1/campaigns', (_request, response) => {
    response.json({ ok: true });
  });
  return createServer(app);
}

function bareServer(): Server {
  return createServer((request, response) => {
    request.on('data', () => undefined);
    request.on('end', () => response.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}'));
  });
}

function floorServer(): Server {
  const db = new Database(join(mkdtempSync(join(tmpdir(), 'campaign-ops-bench-floor-')), 'floor.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE events (position INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, data TEXT NOT NULL)');
  db.exec('CREATE TABLE deliveries (id TEXT PRIMARY KEY, status INTEGER NOT NULL)');
  const append = db.prepare('INSERT INTO events (id, data) VALUES (?, ?)');
  const store = db.prepare('INSERT INTO deliveries (id, status) VALUES (?, 0)');
  const outcome = db.prepare('UPDATE deliveries SET status = ? WHERE id = ?');
  // The service's own group commit (one transaction per turn of the event loop): the writes' cost, not a framework's.
  const commits = new GroupCommit(db);
  const write = (run: () => void) => commits.write(run);
  const target = new URL(process.env.FLOOR_WEBHOOK_URL ?? 'https://127.0.0.1:1/');
  const secret = process.env.FLOOR_SECRET ?? '';
  const agent = new Agent({ connections: 16, pipelining: 1 });

  const deliver = async (id: string) => {
    const body = JSON.stringify({ id: `evt_${id}`, event: 'dispatch.completed', timestamp: new Date().toISOString(), data: { dispatch_id: id } });
    await write(() => {
      append.run(`${id}/completed`, JSON.stringify({ type: 'DispatchCompleted' }));
      store.run(id);
    });
    const signature = 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');
    const answer = await undiciRequest(target, {
      method: 'POST',
      body,
      dispatcher: agent,
      headers: { 'content-type': 'application/json', 'x-service-signature': signature },
    });
    await answer.body.dump();
    await write(() => outcome.run(answer.statusCode, id));
  };

  return createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      let campaign: unknown;
      try {
        campaign = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        response.writeHead(400).end();
        return;
      }
      const id = `dsp_${randomUUID()}`;
      write(() => append.run(id, JSON.stringify({ type: 'DispatchAccepted', campaign })))
        .then(() => {
          response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ success: true, data: { id, status: 'accepted' } }));
          return deliver(id);
        })
        .catch((error: Error) => process.stderr.write(`floor: ${error.message}\n`));
    });
  });
}

const server = process.env.BASELINE === 'http' ? bareServer() : process.env.BASELINE === 'floor' ? floorServer() : expressServer();
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.send?.({ port });
});

// The bench stops us with SIGTERM, or disconnects the IPC channel if it dies first.
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('disconnect', () => process.exit(0));
