import { connect, nanos, StorageType } from 'nats';
import { BusLogger } from './bus-logger';
import { NatsBus } from './nats-bus';
import { busContract } from './testing/bus.contract';
import { NatsServerHandle, startNatsServer } from './testing/nats-server';
import { eventually, waitFor } from './testing/wait-for';

// Failures the tests provoke on purpose (thrown handlers, maxDeliver, restarts) would only add noise.
const quietLogger: BusLogger = { warn: () => undefined, error: () => undefined };

const DAY_MS = 24 * 60 * 60_000;

let server: NatsServerHandle;

beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

busContract('NatsBus', () => NatsBus.connect({ servers: server.url, name: 'bus-contract', logger: quietLogger }));

describe('NatsBus', () => {
  it('creates its stream idempotently when services start together on a fresh server', async () => {
    const fresh = await startNatsServer();
    try {
      const connectAll = () =>
        Promise.all([1, 2, 3].map((i) => NatsBus.connect({ servers: fresh.url, name: `service-${i}`, logger: quietLogger })));
      for (const bus of await connectAll()) await bus.close();
      // Reconnecting with a changed duplicate window updates the stream in place.
      const updated = await NatsBus.connect({ servers: fresh.url, name: 'updated', duplicateWindowMs: 60_000, logger: quietLogger });
      await updated.close();

      const nc = await connect({ servers: fresh.url });
      const jsm = await nc.jetstreamManager();
      const { config } = await jsm.streams.info('CAMPAIGN_OPS_EVENTS');
      const { config: parkedConfig } = await jsm.streams.info('CAMPAIGN_OPS_EVENTS_PARKED');
      await nc.close();
      expect(config).toMatchObject({ subjects: ['evt.>'], storage: StorageType.File, duplicate_window: nanos(60_000), num_replicas: 1, max_age: nanos(DAY_MS * 7) });
      expect(parkedConfig).toMatchObject({
        subjects: ['parked.>'],
        storage: StorageType.File,
        duplicate_window: nanos(60_000),
        num_replicas: 1,
        max_age: nanos(DAY_MS * 30),
      });
    } finally {
      await fresh.stop();
    }
  });

  it('gives a stream created without retention (max_age 0) the max ages asked for, and refuses one below the de-duplication window', async () => {
    // A server of its own: the default stream names, as a deployment from before retention has them.
    const fresh = await startNatsServer();
    const legacy = await connect({ servers: fresh.url });
    try {
      const legacyJsm = await legacy.jetstreamManager();
      // As NatsBus created its streams before retention was set.
      await legacyJsm.streams.add({ name: 'CAMPAIGN_OPS_EVENTS', subjects: ['evt.>'], storage: StorageType.File, duplicate_window: nanos(2 * 60_000) });
      await legacyJsm.streams.add({ name: 'CAMPAIGN_OPS_EVENTS_PARKED', subjects: ['parked.>'], storage: StorageType.File, duplicate_window: nanos(2 * 60_000) });
      expect((await legacyJsm.streams.info('CAMPAIGN_OPS_EVENTS')).config.max_age).toBe(0);

      const bus = await NatsBus.connect({ servers: fresh.url, name: 'retention', streamMaxAgeMs: DAY_MS, parkedMaxAgeMs: DAY_MS * 2, logger: quietLogger });
      await bus.close();
      expect((await legacyJsm.streams.info('CAMPAIGN_OPS_EVENTS')).config.max_age).toBe(nanos(DAY_MS));
      expect((await legacyJsm.streams.info('CAMPAIGN_OPS_EVENTS_PARKED')).config.max_age).toBe(nanos(DAY_MS * 2));

      await expect(NatsBus.connect({ servers: fresh.url, name: 'too-short', streamMaxAgeMs: 60_000, logger: quietLogger })).rejects.toThrow(
        /streamMaxAgeMs \(60000 ms\) must not be shorter than duplicateWindowMs/,
      );
    } finally {
      await legacy.close();
      await fresh.stop();
    }
  });

  it('asks for streamReplicas replicas, and says which stream a single server refuses them for', async () => {
    const error = await NatsBus.connect({ servers: server.url, name: 'replicas', streamName: 'REPLICATED', streamReplicas: 3, logger: quietLogger }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/cannot create JetStream stream REPLICATED \(3 replica\(s\).*replicas/);
  });

  it('parks with the msgId of neither the original nor a previous parking, and logs each parking as an error', async () => {
    const errors: string[] = [];
    const bus = await NatsBus.connect({ servers: server.url, name: 'parking-log', logger: { warn: () => undefined, error: (message) => errors.push(message) } });
    try {
      const durable = `park_${Math.random().toString(36).slice(2, 8)}`;
      const subject = `evt.${durable}.happened`;
      const consumer = await bus.consume({ durable, subject, maxDeliver: 1 }, async () => ({ retryInMs: 10 }));
      await bus.publish(subject, { id: 'a' }, { msgId: `${durable}-a` });
      await waitFor(async () => (await bus.listParked({ durable })).length === 1, 'the first parking');
      const [parked] = await bus.listParked({ durable });
      await bus.replayParked(parked.id);
      // Parked again on the replay's only delivery: a second entry, not a duplicate of the first parking.
      await waitFor(async () => (await bus.listParked({ durable })).length === 1 && (await bus.listParked({ durable }))[0].id !== parked.id, 'the second parking');
      await consumer.stop();
      expect(errors.filter((message) => message.includes(durable) && message.includes('parked (id'))).toHaveLength(2);
    } finally {
      await bus.close();
    }
  });

  it.each([
    ['a restart', () => server.restart()],
    [
      'a crash and restart',
      async () => {
        server.kill();
        await server.restart();
      },
    ],
  ])('keeps consuming and responding across %s of nats-server', async (_, restart) => {
    const bus = await NatsBus.connect({ servers: server.url, name: 'restart', logger: quietLogger });
    const root = `evt.restart${Math.random().toString(36).slice(2, 8)}`;
    try {
      const seen: string[] = [];
      const consumer = await bus.consume<{ id: string }>({ durable: root.replace('.', '_'), subject: `${root}.>` }, async (message) => {
        seen.push(message.data.id);
      });
      await bus.respond(`rpc.${root}.echo`, async (data) => data);

      await bus.publish(`${root}.happened`, { id: 'before' });
      await waitFor(() => seen.includes('before'), 'the message published before the restart');

      await restart();
      // Refused while the client is disconnected; it reconnects on its own. The msgId makes retrying safe.
      await eventually(() => bus.publish(`${root}.happened`, { id: 'after' }, { msgId: `${root}-after` }), 'a publish after the restart', 15_000);
      await waitFor(() => seen.includes('after'), 'the message published after the restart', 15_000);
      await expect(bus.request(`rpc.${root}.echo`, { ok: 1 })).resolves.toEqual({ ok: 1 });

      await consumer.stop();
      // At least once: an ack the server had not yet processed or persisted when it went down means 'before' again.
      expect([...new Set(seen)]).toEqual(['before', 'after']);
    } finally {
      await bus.close();
    }
  });
});

