/**
 * The baselines, each run as its own process by the bench (like the service) so the client and
 * the server do not share one event loop. Listens on an ephemeral port of 127.0.0.1 and tells the
 * parent which one over IPC.
 *
 *   BASELINE=express  the least an Express app can do for our request: a JSON body parsed and
 *                     `{ok:true}` answered (what the gateway is compared with)
 *   BASELINE=http     bare node:http, the body read and `{"ok":true}` answered: no framework at
 *                     all, to show how far the bench's own client can drive a server
 */
import { createServer, Server } from 'node:http';
import express from 'express';

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

const server = process.env.BASELINE === 'http' ? bareServer() : expressServer();
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.send?.({ port });
});

// The bench stops us with SIGTERM, or disconnects the IPC channel if it dies first.
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('disconnect', () => process.exit(0));
