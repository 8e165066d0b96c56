import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { InProcessBus } from '@campaign-ops/adapters/bus';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { HealthController } from './health.http.controller';
import { Infrastructure } from './infrastructure';
import { INFRASTRUCTURE } from './infrastructure.tokens';
import { reportProcessorState } from './processor-status';

/**
 * Kubernetes routes traffic to a pod while /readyz answers 2xx, and restarts it when /healthz does
 * not: readiness follows the dependencies, liveness does not.
 */
describe('HealthController', () => {
  let infrastructure: Infrastructure;
  let app: INestApplication;
  let base: string;

  beforeEach(async () => {
    infrastructure = { eventStore: SqliteEventStore.open(':memory:'), readStore: SqliteReadStore.open(':memory:'), bus: InProcessBus.open() };
    const module = await Test.createTestingModule({
      controllers: [HealthController],
      providers: [{ provide: INFRASTRUCTURE, useValue: infrastructure }],
    }).compile();
    app = module.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });

  afterEach(async () => {
    await app.close();
    for (const dependency of Object.values(infrastructure)) await dependency.close();
  });

  const get = async (path: string) => {
    const response = await fetch(`${base}${path}`);
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
  };

  it('is ready while every dependency answers', async () => {
    expect(await get('/readyz')).toEqual({
      status: 200,
      retryAfter: null,
      body: {
        success: true,
        data: { status: 'ready', checks: { eventStore: 'ok', readStore: 'ok', bus: 'ok', processors: 'ok' } },
        request_id: expect.stringMatching(/^req_/),
      },
    });
  });

  it.each(['eventStore', 'readStore', 'bus'] as const)('answers 503 service_unavailable, naming the check, while %s is unreachable', async (failing) => {
    await infrastructure[failing].close();
    const answer = await get('/readyz');
    expect(answer.status).toBe(503);
    expect(answer.retryAfter).toBe('5');
    expect(answer.body).toEqual({
      success: false,
      error: {
        type: 'api_error',
        code: 'service_unavailable',
        message: expect.any(String),
        checks: { eventStore: 'ok', readStore: 'ok', bus: 'ok', processors: 'ok', [failing]: expect.stringMatching(/^unreachable: ./) },
      },
      request_id: expect.stringMatching(/^req_/),
    });
  });

  it('is not ready while a processor refuses to run, and says which and why', async () => {
    reportProcessorState('dispatch-views', 'refusing', "checkpoint 900 is ahead of the event store's head 12");
    try {
      const answer = await get('/readyz');
      expect(answer.status).toBe(503);
      expect((answer.body as { error: { checks: unknown } }).error.checks).toEqual({
        eventStore: 'ok',
        readStore: 'ok',
        bus: 'ok',
        processors: "dispatch-views: checkpoint 900 is ahead of the event store's head 12",
      });
    } finally {
      reportProcessorState('dispatch-views', 'active');
    }
    expect((await get('/readyz')).status).toBe(200);
  });

  it('stays alive on /healthz while a dependency is unreachable', async () => {
    await infrastructure.bus.close();
    expect(await get('/healthz')).toEqual({
      status: 200,
      retryAfter: null,
      body: { success: true, data: { status: 'ok' }, request_id: expect.stringMatching(/^req_/) },
    });
  });
});
