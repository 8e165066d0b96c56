/**
 * The bus as a NestJS transport, on both adapters (in-process, and NATS JetStream on a real
 * nats-server): decorated handlers answer requests and consume durably with the semantics of the
 * Bus port (errors reach the caller by message, a throw is redelivered, `{ retryInMs }` comes back,
 * lanes run side by side), and interceptors run around them as around HTTP handlers.
 */
import { CallHandler, Controller, ExecutionContext, INestMicroservice, Injectable, NestInterceptor } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { firstValueFrom, Observable } from 'rxjs';
import { Bus, BusRemoteError } from '@campaign-ops/bus';
import { InProcessBus, NatsBus } from '@campaign-ops/adapters/bus';
import { deferred, NatsServerHandle, startNatsServer, waitFor } from '@campaign-ops/testing/bus';
import { BusClient, BusContext, BusExceptionFilter, BusRecord, BusTransport, DurableConsumerOptions } from './index';

interface Probe {
  seen: { subject: string; data: unknown; deliveryCount: number }[];
  running: number;
  mostAtOnce: number;
  release: () => void;
  intercepted: string[];
}
const probe: Probe = { seen: [], running: 0, mostAtOnce: 0, release: () => undefined, intercepted: [] };

@Controller()
class ProbeController {
  @MessagePattern('rpc.echo')
  echo(@Payload() data: { text: string }, @Ctx() context: BusContext) {
    return { text: data.text, requestId: context.getHeaders()['X-Request-Id'] ?? null };
  }

  @MessagePattern('rpc.fail')
  fail(): never {
    throw new Error('the ledger is closed');
  }

  @EventPattern('evt.probe.once', { durable: 'probe-once' } satisfies DurableConsumerOptions)
  once(@Payload() data: unknown, @Ctx() context: BusContext) {
    probe.seen.push({ subject: context.getSubject(), data, deliveryCount: context.getDeliveryCount() });
  }

  @EventPattern('evt.probe.flaky', { durable: 'probe-flaky' } satisfies DurableConsumerOptions)
  flaky(@Payload() data: unknown, @Ctx() context: BusContext) {
    probe.seen.push({ subject: context.getSubject(), data, deliveryCount: context.getDeliveryCount() });
    if (context.getDeliveryCount() === 1) throw new Error('not yet');
  }

  @EventPattern('evt.probe.later', { durable: 'probe-later' } satisfies DurableConsumerOptions)
  later(@Payload() data: unknown, @Ctx() context: BusContext) {
    probe.seen.push({ subject: context.getSubject(), data, deliveryCount: context.getDeliveryCount() });
    return context.getDeliveryCount() === 1 ? { retryInMs: 50 } : undefined;
  }

  @EventPattern('evt.probe.patient', {
    durable: 'probe-patient',
    ackWaitMs: (config: { lanes: number; ackWaitMs: number }) => config.ackWaitMs,
  } satisfies DurableConsumerOptions<{ lanes: number; ackWaitMs: number }>)
  patient() {
    return undefined;
  }

  @EventPattern('evt.probe.slow', { durable: 'probe-slow', lanes: (config: { lanes: number }) => config.lanes } satisfies DurableConsumerOptions<{
    lanes: number;
  }>)
  async slow() {
    probe.running++;
    probe.mostAtOnce = Math.max(probe.mostAtOnce, probe.running);
    await new Promise<void>((resolve) => {
      const previous = probe.release;
      probe.release = () => {
        previous();
        resolve();
      };
    });
    probe.running--;
  }
}

@Injectable()
class RecordingInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    probe.intercepted.push(context.switchToRpc().getContext<BusContext>().getSubject());
    return next.handle();
  }
}

const adapters: [string, () => Promise<{ bus: Bus; stop: () => Promise<void> }>][] = [
  [
    'in-process',
    async () => {
      const bus = InProcessBus.open({ pollIntervalMs: 20 });
      return { bus, stop: () => bus.close() };
    },
  ],
  [
    'NATS JetStream',
    async () => {
      const server: NatsServerHandle = await startNatsServer();
      const bus = await NatsBus.connect({ servers: server.url, name: 'transport-spec' });
      return {
        bus,
        stop: async () => {
          await bus.close();
          await server.stop();
        },
      };
    },
  ],
];

describe.each(adapters)('BusTransport over the %s bus', (_, open) => {
  let bus: Bus;
  let stop: () => Promise<void>;
  let app: INestMicroservice;
  let client: BusClient;
  let consumed: jest.SpyInstance;

  beforeAll(async () => {
    ({ bus, stop } = await open());
    const module = await Test.createTestingModule({ controllers: [ProbeController] }).compile();
    consumed = jest.spyOn(bus, 'consume');
    app = module.createNestMicroservice({ strategy: new BusTransport(bus, { lanes: 3, ackWaitMs: 4_321 }), logger: false });
    app.useGlobalInterceptors(new RecordingInterceptor());
    app.useGlobalFilters(new BusExceptionFilter());
    await app.listen();
    client = new BusClient({ bus, requestTimeoutMs: 5000 });
  }, 30_000);

  afterAll(async () => {
    probe.release();
    await app?.close();
    await stop?.();
  });

  beforeEach(() => {
    probe.seen = [];
    probe.intercepted = [];
  });

  it('answers a request through a @MessagePattern handler, with the headers of its BusRecord', async () => {
    const answer = await firstValueFrom(client.send('rpc.echo', new BusRecord({ text: 'hi' }, { 'X-Request-Id': 'req_abc' })));
    expect(answer).toEqual({ text: 'hi', requestId: 'req_abc' });
    expect(probe.intercepted).toEqual(['rpc.echo']);
  });

  it("gives the caller the handler's own error message, as the bus does", async () => {
    const failing = firstValueFrom(client.send('rpc.fail', {}));
    await expect(failing).rejects.toBeInstanceOf(BusRemoteError);
    await expect(firstValueFrom(client.send('rpc.fail', {}))).rejects.toThrow('the ledger is closed');
  });

  it('delivers a durable event to its @EventPattern consumer once', async () => {
    await firstValueFrom(client.emit('evt.probe.once', { n: 1 }));
    await waitFor(() => probe.seen.length === 1, 'the event to be consumed');
    // A second event arriving proves the first was settled, not left to come back.
    await firstValueFrom(client.emit('evt.probe.once', { n: 2 }));
    await waitFor(() => probe.seen.length === 2, 'the second event');
    expect(probe.seen).toEqual([
      { subject: 'evt.probe.once', data: { n: 1 }, deliveryCount: 1 },
      { subject: 'evt.probe.once', data: { n: 2 }, deliveryCount: 1 },
    ]);
    expect(probe.intercepted).toEqual(['evt.probe.once', 'evt.probe.once']);
  });

  it('redelivers an event whose handler threw', async () => {
    await bus.publish('evt.probe.flaky', { n: 1 });
    await waitFor(() => probe.seen.length === 2, 'the redelivery', 15_000);
    expect(probe.seen.map((s) => s.deliveryCount)).toEqual([1, 2]);
  }, 20_000);

  it('delivers again after the delay a handler asked for with { retryInMs }', async () => {
    await bus.publish('evt.probe.later', { n: 1 });
    await waitFor(() => probe.seen.length === 2, 'the delayed redelivery');
    expect(probe.seen.map((s) => s.deliveryCount)).toEqual([1, 2]);
  });

  it("takes a durable consumer's ack wait from the configuration when it is a function of it", () => {
    const patient = consumed.mock.calls.map(([options]) => options).find((options) => options.durable === 'probe-patient');
    expect(patient).toMatchObject({ subject: 'evt.probe.patient', ackWaitMs: 4_321 });
  });

  it('runs as many handlers of one durable at once as its lanes, taken from the configuration', async () => {
    const all = deferred();
    for (let i = 0; i < 5; i++) await bus.publish('evt.probe.slow', { i });
    await waitFor(() => probe.running === 3, 'three lanes busy');
    // With every lane busy, a fourth handler cannot start: the count stays at three.
    expect(probe.mostAtOnce).toBe(3);
    probe.release();
    await waitFor(() => probe.running === 2, 'the last two events to run');
    expect(probe.mostAtOnce).toBe(3);
    probe.release();
    all.resolve();
  }, 20_000);
});
