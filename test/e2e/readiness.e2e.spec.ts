/**
 * /readyz follows the dependencies (Kubernetes takes an unready pod out of its Service), /healthz
 * does not (Kubernetes would restart a pod that fails it, which cures no outage of NATS).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServerHandle, startNatsServer } from '@campaign-ops/testing/bus';
import { eventually } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';
import { assertAnswerMatchesDocument } from '../support/openapi-answers';

describe('readiness of an app over NATS', () => {
  let dataDir: string;
  let nats: NatsServerHandle;
  let gateway: ServiceProcess;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-readiness-'));
    nats = await startNatsServer();
    gateway = await ServiceProcess.start('api-gateway', { NATS_URL: nats.url, DATA_DIR: dataDir, IDEMPOTENCY_SECRET_KEY: randomBytes(32).toString('hex') });
  }, 60_000);

  afterAll(async () => {
    await gateway?.stop();
    await nats?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const probe = async (path: string) => {
    const response = await fetch(gateway.url + path);
    const body = (await response.json()) as any;
    await assertAnswerMatchesDocument(gateway.url, 'GET', path, response.status, response.headers.get('content-type'), body);
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body };
  };

  it('is unready while nats-server is down and ready again once it is back, alive throughout', async () => {
    // Liveness sampled all along, not only at the moments the test looks.
    const liveness: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        liveness.push((await probe('/healthz')).status);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    try {
      expect((await probe('/readyz')).body.data.checks).toEqual({ eventStore: 'ok', readStore: 'ok', bus: 'ok', processors: 'ok' });

      nats.kill();
      const unready = await eventually(
        async () => {
          const answer = await probe('/readyz');
          return answer.status !== 200 && answer;
        },
        10_000,
        '/readyz to answer 503 without NATS',
      );
      expect(unready.status).toBe(503);
      expect(unready.retryAfter).toEqual(expect.stringMatching(/^\d+$/));
      expect(unready.body).toEqual({
        success: false,
        error: {
          type: 'api_error',
          code: 'service_unavailable',
          message: expect.any(String),
          checks: { eventStore: 'ok', readStore: 'ok', processors: 'ok', bus: expect.stringMatching(/^unreachable: /) },
        },
        request_id: expect.stringMatching(/^req_/),
      });
      // Alive while unready: at least this sample is taken in the outage.
      expect((await probe('/healthz')).status).toBe(200);

      await nats.restart();
      const ready = await eventually(
        async () => {
          const answer = await probe('/readyz');
          return answer.status === 200 && answer;
        },
        15_000,
        '/readyz to answer 200 once NATS is back',
      );
      expect(ready.body.data).toEqual({ status: 'ready', checks: { eventStore: 'ok', readStore: 'ok', bus: 'ok', processors: 'ok' } });
    } finally {
      sampling = false;
      await sampler;
    }
    expect(liveness.length).toBeGreaterThan(0);
    expect(liveness.filter((status) => status !== 200)).toEqual([]);
  });
});
