import { createServer } from 'node:net';
import { Counter } from 'prom-client';
import { registry } from './metrics';
import { MetricsServer, startMetricsServer } from './metrics.server';

/** A free port on 127.0.0.1 (bound, read, released). */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

/**
 * Prometheus scrapes every app on METRICS_PORT, a port of its own: nothing but GET /metrics is
 * served there, and the API's port (the one an Ingress routes) does not serve metrics at all.
 */
describe('startMetricsServer', () => {
  let server: MetricsServer;
  let base: string;
  const probe = new Counter({ name: 'metrics_server_spec_probe_total', help: 'A sample this spec looks for.', registers: [registry] });
  afterAll(() => registry.removeSingleMetric('metrics_server_spec_probe_total'));

  beforeEach(async () => {
    server = await startMetricsServer(await freePort(), '127.0.0.1');
    base = `http://127.0.0.1:${server.port}`;
  });
  afterEach(() => server.close());

  it("serves the process's registry at GET /metrics, in the text exposition format", async () => {
    probe.inc(3);
    const response = await fetch(`${base}/metrics?scrape=1`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(registry.contentType);
    const text = await response.text();
    expect(text).toMatch(/^metrics_server_spec_probe_total 3$/m);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
  });

  it('answers HEAD without a body, another method 405, any other path 404', async () => {
    const head = await fetch(`${base}/metrics`, { method: 'HEAD' });
    expect([head.status, await head.text()]).toEqual([200, '']);
    const post = await fetch(`${base}/metrics`, { method: 'POST' });
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    for (const path of ['/', '/healthz', '/v1/account', '/metrics/x', '/admin/v1/accounts'])
      expect([path, (await fetch(`${base}${path}`)).status]).toEqual([path, 404]);
  });

  it('refuses to start on a port already taken, naming METRICS_PORT', async () => {
    await expect(startMetricsServer(server.port, '127.0.0.1')).rejects.toThrow(new RegExp(`^METRICS_PORT ${server.port} is already in use`));
  });

  it('stops listening once closed (and closing twice is harmless)', async () => {
    await server.close();
    await server.close();
    await expect(fetch(`${base}/metrics`)).rejects.toThrow();
    const again = await startMetricsServer(server.port, '127.0.0.1');
    await again.close();
  });
});
