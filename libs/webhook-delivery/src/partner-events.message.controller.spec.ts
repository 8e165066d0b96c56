import { INestMicroservice } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { InProcessBus } from '@campaign-ops/adapters/bus';
import { BusTransport } from '@campaign-ops/bus-transport';
import { PartnerEvent, partnerEventsOnBus } from '@campaign-ops/webhook-domain';
import { waitFor } from '@campaign-ops/testing/bus';
import { EventQueries } from './event-queries';
import { FanOut } from './fan-out';
import { FAN_OUT_LANES, PartnerEventsMessageController } from './partner-events.message.controller';

/** The fan-out's durable consumer, as webhook-delivery-service runs it over the bus. */
describe('PartnerEventsMessageController', () => {
  let bus: InProcessBus;
  let app: INestMicroservice;
  const running = new Set<string>();
  const finish: Array<() => void> = [];

  beforeEach(async () => {
    bus = InProcessBus.open({ pollIntervalMs: 20 });
    const fanOut = {
      // Each fan-out waits until the spec lets it finish: a slow insert, a slow store.
      handle: (event: PartnerEvent) =>
        new Promise<void>((resolve) => {
          running.add(event.id);
          finish.push(() => {
            running.delete(event.id);
            resolve();
          });
        }),
    };
    const module = await Test.createTestingModule({
      controllers: [PartnerEventsMessageController],
      providers: [
        { provide: FanOut, useValue: fanOut },
        { provide: EventQueries, useValue: {} },
      ],
    }).compile();
    app = module.createNestMicroservice({ strategy: new BusTransport(bus), logger: false });
    await app.listen();
  });

  afterEach(async () => {
    finish.splice(0).forEach((done) => done());
    await app.close();
    await bus.close();
  });

  it('fans out several partner events at once: a slow one does not hold up the others', async () => {
    const sink = partnerEventsOnBus(bus);
    const events = Array.from({ length: FAN_OUT_LANES + 2 }, (_, i) => ({
      id: `evt_${i}`,
      event: 'dispatch.completed' as const,
      timestamp: '2026-01-01T00:00:00.000Z',
      data: {},
      accountId: 'acct_1',
      mode: 'test' as const,
    }));
    for (const event of events) await sink.accept(event, `msg-${event.id}`);
    await waitFor(() => running.size === FAN_OUT_LANES, `${FAN_OUT_LANES} fan-outs at once`);
    expect(FAN_OUT_LANES).toBeGreaterThan(1);
    // Never more than its lanes; the rest follow as lanes free.
    finish.splice(0).forEach((done) => done());
    await waitFor(() => finish.length === 2, 'the last two events');
  });
});
