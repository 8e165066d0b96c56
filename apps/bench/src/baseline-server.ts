/**
 * The baseline: the least an Express app can do for our request, a JSON body parsed and
 * `{ok:true}` answered. Run as its own process by the bench (like the service) so the client
 * and the server do not share one event loop. Listens on an ephemeral port of 127.0.0.1 and
 * tells the parent which one over IPC.
 */
import express from 'express';

const app = express();
app.disable('x-powered-by');
app.use(express.json({ limit: '100kb' }));
app.post('/v1/campaigns', (_request, response) => {
  response.json({ ok: true });
});

const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.send?.({ port });
});

// The bench stops us with SIGTERM, or disconnects the IPC channel if it dies first.
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('disconnect', () => process.exit(0));
