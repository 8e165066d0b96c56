import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { registry } from './metrics';

/** Prometheus' scrape endpoint, on a port of its own. */
export interface MetricsServer {
  /** The port it listens on (the one asked for). */
  readonly port: number;
  /** Stops listening and ends idle keep-alive connections; resolves once closed. */
  close(): Promise<void>;
}

/**
 * `GET /metrics` (and HEAD) in the text exposition format, on METRICS_PORT: a bare node:http server
 * beside the app's HTTP server, so neither the API's middleware (keys, rate limits) nor its routes
 * are involved, and what routes the API (an Ingress) cannot reach it. Anything else is 404 (405 for
 * another method on /metrics). A port already taken fails the start, naming METRICS_PORT.
 */
export async function startMetricsServer(port: number, host: string): Promise<MetricsServer> {
  const server = createServer((request, response) => void answer(request, response));
  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      reject(new Error(error.code === 'EADDRINUSE' ? `METRICS_PORT ${port} is already in use on ${host}` : `METRICS_PORT ${port}: ${error.message}`));
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  let closing: Promise<void> | null = null;
  return {
    port: (server.address() as AddressInfo).port,
    close: () => (closing ??= closeServer(server)),
  };
}

async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const path = (request.url ?? '/').split('?')[0];
  if (path !== '/metrics') return send(response, 404, 'text/plain; charset=utf-8', 'Not found: metrics are at /metrics\n');
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('Allow', 'GET, HEAD');
    return send(response, 405, 'text/plain; charset=utf-8', 'Method not allowed\n');
  }
  try {
    const text = await registry.metrics();
    send(response, 200, registry.contentType, request.method === 'HEAD' ? '' : text);
  } catch (error) {
    send(response, 500, 'text/plain; charset=utf-8', `Collecting metrics failed: ${(error as Error).message}\n`);
  }
}

function send(response: ServerResponse, status: number, contentType: string, body: string): void {
  response.writeHead(status, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
  response.end(body);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
