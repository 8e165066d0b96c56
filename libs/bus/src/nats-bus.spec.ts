import { connect, JetStreamManager, nanos, NatsError, StorageType } from 'nats';
import { BusLogger } from './bus-logger';
import { ensureStream, NatsBus } from './nats-bus';
import { busContract } from './testing/bus.contract';
import { NatsServerHandle, startNatsServer } from './testing/nats-server';
import { startNatsCluster } from './testing/nats-cluster';
import { deferred, eventually, waitFor } from './testing/wait-for';
import { NOT_ACKED_ON_LAST_DELIVERY } from './parking';
import { PULL_EXPIRES_MS } from './nats-lane-pulls';

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
  it('takes a stream another service added between its look and its own add (which the server refuses), and brings it to its settings', async () => {
    const fresh = await startNatsServer();
    const nc = await connect({ servers: fresh.url });
    try {
      const jsm = await nc.jetstreamManager();
      // The other service's stream, with other settings, so that this add is refused for sure.
      await jsm.streams.add({ name: 'RACED', subjects: ['raced.>'], storage: StorageType.File, duplicate_window: nanos(30_000), max_age: nanos(60_000) });
      // This service's look came just before: it found nothing.
      const notFound = Object.assign(new NatsError('stream not found', '404'), { api_error: { code: 404, err_code: 10059, description: 'stream not found' } });
      let looks = 0;
      const streams = jsm.streams;
      const late = {
        streams: {
          info: (name: string) => (looks++ === 0 ? Promise.reject(notFound) : streams.info(name)),
          add: (config: Parameters<typeof streams.add>[0]) => streams.add(config),
          update: (name: string, config: Parameters<typeof streams.update>[1]) => streams.update(name, config),
        },
      } as unknown as JetStreamManager;

      await ensureStream(late, { name: 'RACED', subjects: ['raced.>'], duplicateWindowMs: 120_000, replicas: 1, maxAgeMs: DAY_MS });
      expect((await jsm.streams.info('RACED')).config).toMatchObject({ duplicate_window: nanos(120_000), max_age: nanos(DAY_MS) });
      // A refused add with no stream there after all is reported (here: a window longer than the age).
      await expect(ensureStream(jsm, { name: 'NEVER', subjects: ['never.>'], duplicateWindowMs: 120_000, replicas: 1, maxAgeMs: 60_000 })).rejects.toThrow(
        /cannot create JetStream stream NEVER/,
      );
    } finally {
      await nc.close();
      await fresh.stop();
    }
  });

  it('creates its stream idempotently when services start together on a fresh server', async () => {
    const fresh = await startNatsServer();
    try {
      const connectAll = () => Promise.all([1, 2, 3].map((i) => NatsBus.connect({ servers: fresh.url, name: `service-${i}`, logger: quietLogger })));
      for (const bus of await connectAll()) await bus.close();
      // Reconnecting with a changed duplicate window updates the stream in place.
      const updated = await NatsBus.connect({ servers: fresh.url, name: 'updated', duplicateWindowMs: 60_000, logger: quietLogger });
      await updated.close();

      const nc = await connect({ servers: fresh.url });
      const jsm = await nc.jetstreamManager();
      const { config } = await jsm.streams.info('CAMPAIGN_OPS_EVENTS');
      const { config: parkedConfig } = await jsm.streams.info('CAMPAIGN_OPS_EVENTS_PARKED');
      await nc.close();
      expect(config).toMatchObject({
        subjects: ['evt.>'],
        storage: StorageType.File,
        duplicate_window: nanos(60_000),
        num_replicas: 1,
        max_age: nanos(DAY_MS * 7),
      });
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
      await legacyJsm.streams.add({
        name: 'CAMPAIGN_OPS_EVENTS_PARKED',
        subjects: ['parked.>'],
        storage: StorageType.File,
        duplicate_window: nanos(2 * 60_000),
      });
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

  it('has sent the acks of what a consumer handled by the time its stop() resolves, so a connection closed right after loses none', async () => {
    const bus = await NatsBus.connect({ servers: server.url, name: 'acks-at-stop', logger: quietLogger });
    const nc = await connect({ servers: server.url });
    try {
      const durable = `acks_${Math.random().toString(36).slice(2, 8)}`;
      const subject = `evt.${durable}.happened`;
      const handled = deferred<void>();
      const consumer = await bus.consume({ durable, subject, ackWaitMs: DAY_MS }, async () => void handled.resolve());
      await bus.publish(subject, { id: 'a' }, { msgId: `${durable}-a` });
      await handled.promise;
      await consumer.stop();
      // Closed at once, not drained: whatever the connection still held is lost.
      await (bus as unknown as { nc: { close(): Promise<void> } }).nc.close();
      const jsm = await nc.jetstreamManager();
      await eventually(
        async () => {
          const info = await jsm.consumers.info('CAMPAIGN_OPS_EVENTS', durable);
          expect(info.num_ack_pending).toBe(0);
          expect(info.ack_floor.stream_seq).toBe(info.delivered.stream_seq);
        },
        'the ack in the server',
        2000,
      );
    } finally {
      await bus.close();
      await nc.close();
    }
  });

  it('parks with the msgId of neither the original nor a previous parking, and logs each parking as an error', async () => {
    const errors: string[] = [];
    const bus = await NatsBus.connect({
      servers: server.url,
      name: 'parking-log',
      logger: { warn: () => undefined, error: (message) => errors.push(message) },
    });
    try {
      const durable = `park_${Math.random().toString(36).slice(2, 8)}`;
      const subject = `evt.${durable}.happened`;
      const consumer = await bus.consume({ durable, subject, maxDeliver: 1 }, async () => ({ retryInMs: 10 }));
      await bus.publish(subject, { id: 'a' }, { msgId: `${durable}-a` });
      await waitFor(async () => (await bus.listParked({ durable })).length === 1, 'the first parking');
      const [parked] = await bus.listParked({ durable });
      await bus.replayParked(parked.id);
      // Parked again on the replay's only delivery: a second entry, not a duplicate of the first parking.
      await waitFor(
        async () => (await bus.listParked({ durable })).length === 1 && (await bus.listParked({ durable }))[0].id !== parked.id,
        'the second parking',
      );
      await consumer.stop();
      expect(errors.filter((message) => message.includes(durable) && message.includes('parked (id'))).toHaveLength(2);
    } finally {
      await bus.close();
    }
  });

  // Written against the installed nats-server (Debian's 2.9.10, `nats-server --version`), which
  // takes a consumer create for an existing durable as an update; 2.10+ refuses it when the settings
  // differ (nats.js sends `action: "create"`). Either way the durable must end up with one set of
  // settings, said in a log line, and every instance must keep working.
  describe('two versions of an app on one durable (a rolling upgrade)', () => {
    const durableName = () => `roll_${Math.random().toString(36).slice(2, 8)}`;
    const capture = () => {
      const lines: { level: 'warn' | 'error'; message: string }[] = [];
      const logger: BusLogger = { warn: (message) => lines.push({ level: 'warn', message }), error: (message) => lines.push({ level: 'error', message }) };
      return { lines, logger };
    };
    const consumerConfig = async (durable: string) => {
      const nc = await connect({ servers: server.url });
      try {
        return (await (await nc.jetstreamManager()).consumers.info('CAMPAIGN_OPS_EVENTS', durable)).config;
      } finally {
        await nc.close();
      }
    };

    it('updates ackWaitMs and maxDeliver in place, says so, and both versions keep consuming', async () => {
      const durable = durableName();
      const subject = `evt.${durable}.happened`;
      const v1Log = capture();
      const v2Log = capture();
      const v1 = await NatsBus.connect({ servers: server.url, name: 'v1', logger: v1Log.logger });
      const v2 = await NatsBus.connect({ servers: server.url, name: 'v2', logger: v2Log.logger });
      const seen: { version: string; id: number }[] = [];
      try {
        const old = await v1.consume<{ id: number }>({ durable, subject, ackWaitMs: 30_000, maxDeliver: 5 }, async (m) => {
          seen.push({ version: 'v1', id: m.data.id });
        });
        expect(await consumerConfig(durable)).toMatchObject({ ack_wait: nanos(30_000), max_deliver: 5, filter_subject: subject });
        const upgraded = await v2.consume<{ id: number }>({ durable, subject, ackWaitMs: 10_000, maxDeliver: 7 }, async (m) => {
          seen.push({ version: 'v2', id: m.data.id });
        });
        expect(await consumerConfig(durable)).toMatchObject({ ack_wait: nanos(10_000), max_deliver: 7, filter_subject: subject });
        expect(v2Log.lines).toEqual([
          { level: 'warn', message: expect.stringMatching(new RegExp(`consumer ${durable}: .*ackWaitMs 30000 -> 10000.*maxDeliver 5 -> 7`)) },
        ]);

        // Both versions pull from the one durable: publish until each has handled something.
        for (let id = 0; id < 200 && !(seen.some((s) => s.version === 'v1') && seen.some((s) => s.version === 'v2')); id++) {
          await v1.publish(subject, { id });
          await waitFor(() => seen.some((s) => s.id === id), `message ${id}`);
        }
        expect(new Set(seen.map((s) => s.version))).toEqual(new Set(['v1', 'v2']));

        // The old version restarting during the rollout sets its own settings again, and says so too.
        await old.stop();
        const restarted = await v1.consume({ durable, subject, ackWaitMs: 30_000, maxDeliver: 5 }, async () => undefined);
        expect(await consumerConfig(durable)).toMatchObject({ ack_wait: nanos(30_000), max_deliver: 5 });
        expect(v1Log.lines.map((line) => line.message)).toEqual([expect.stringMatching(/ackWaitMs 10000 -> 30000.*maxDeliver 7 -> 5/)]);
        // The same settings again: nothing to update, nothing said.
        const again = await v2.consume({ durable, subject, ackWaitMs: 30_000, maxDeliver: 5 }, async () => undefined);
        expect(v2Log.lines).toHaveLength(1);
        await Promise.all([upgraded.stop(), restarted.stop(), again.stop()]);
      } finally {
        await Promise.all([v1.close(), v2.close()]);
      }
    });

    // nats-server 2.10+ refuses `action: "create"` for a durable that exists with other settings, so
    // a rolling upgrade changing ackWaitMs would stop the new pods from starting. The installed
    // 2.9.10 accepts it, so this reads what the adapter asks of JetStream on the wire instead (the
    // API requests, seen by a subscriber of $JS.API.CONSUMER.>), on a 3-node cluster with replicas 3
    // as in production, and with two instances of each version starting at once.
    it('asks JetStream to create a durable only while it is missing, and to update it otherwise (what 2.10+ requires)', async () => {
      const cluster = await startNatsCluster(3);
      const tap = await connect({ servers: cluster.url });
      const asked: Array<{ subject: string; action: string | undefined; ackWait: number | undefined }> = [];
      const durable = durableName();
      const subject = `evt.${durable}.happened`;
      const buses: NatsBus[] = [];
      try {
        const sub = tap.subscribe('$JS.API.CONSUMER.>', {
          callback: (_, message) => {
            if (!message.subject.includes('CREATE') || !message.subject.includes(durable)) return;
            const body = JSON.parse(new TextDecoder().decode(message.data)) as { action?: string; config?: { ack_wait?: number } };
            asked.push({ subject: message.subject, action: body.action, ackWait: body.config?.ack_wait });
          },
        });
        await tap.flush();
        // A fresh cluster may take longer than a JetStream API call's 5 s to place the first R3
        // stream on a busy machine: the first connection tries again, as the apps do at start.
        const deadline = Date.now() + 30_000;
        for (;;) {
          try {
            buses.push(await NatsBus.connect({ servers: cluster.url, name: 'v1-a', streamReplicas: 3, logger: quietLogger }));
            break;
          } catch (error) {
            if (Date.now() > deadline) throw error;
            await new Promise((resolve) => setTimeout(resolve, 500));
          }
        }
        for (const name of ['v1-b', 'v2-a', 'v2-b']) {
          buses.push(await NatsBus.connect({ servers: cluster.url, name, streamReplicas: 3, logger: quietLogger }));
        }
        const [v1a, v1b, v2a, v2b] = buses;
        const handler = async () => undefined;
        // Two instances of v1 start together on a fresh durable: creates (identical) only. Then two
        // instances of v2 with another ackWaitMs: the durable exists, so updates only. The tap may see
        // the requests late, so they are told apart by the ack wait they ask for, not by arrival.
        await Promise.all([
          v1a.consume({ durable, subject, ackWaitMs: 30_000, maxDeliver: 5 }, handler),
          v1b.consume({ durable, subject, ackWaitMs: 30_000, maxDeliver: 5 }, handler),
        ]);
        await Promise.all([
          v2a.consume({ durable, subject, ackWaitMs: 10_000, maxDeliver: 7 }, handler),
          v2b.consume({ durable, subject, ackWaitMs: 10_000, maxDeliver: 7 }, handler),
        ]);
        await tap.flush();
        await waitFor(
          () => asked.some((request) => request.ackWait === nanos(30_000)) && asked.some((request) => request.ackWait === nanos(10_000)),
          'the requests of both versions at the tap',
        );
        const actions = (ackWaitMs: number) => [...new Set(asked.filter((request) => request.ackWait === nanos(ackWaitMs)).map((request) => request.action))];
        expect(actions(30_000)).toEqual(['create']);
        expect(actions(10_000)).toEqual(['update']);
        expect(asked.every((request) => request.ackWait === nanos(30_000) || request.ackWait === nanos(10_000))).toBe(true);
        const jsm = await tap.jetstreamManager();
        expect((await jsm.consumers.info('CAMPAIGN_OPS_EVENTS', durable)).config).toMatchObject({ ack_wait: nanos(10_000), max_deliver: 7 });
        await sub.drain();
      } finally {
        await Promise.all(buses.map((bus) => bus.close()));
        await tap.close();
        await cluster.stop();
      }
    }, 60_000);

    it('refuses to start a consumer whose filter subject differs from the durable’s, naming both, and leaves the durable alone', async () => {
      const durable = durableName();
      const { lines, logger } = capture();
      const v1 = await NatsBus.connect({ servers: server.url, name: 'v1', logger: quietLogger });
      const v2 = await NatsBus.connect({ servers: server.url, name: 'v2', logger });
      const seen: string[] = [];
      try {
        const old = await v1.consume<{ id: string }>({ durable, subject: `evt.${durable}.a` }, async (m) => {
          seen.push(m.data.id);
        });
        const refused = await v2.consume({ durable, subject: `evt.${durable}.>` }, async () => undefined).catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(Error);
        expect((refused as Error).message).toContain(`durable consumer ${durable}`);
        expect((refused as Error).message).toContain(`filter subject evt.${durable}.a`);
        expect((refused as Error).message).toContain(`evt.${durable}.>`);
        expect(lines).toEqual([{ level: 'error', message: (refused as Error).message }]);
        expect(await consumerConfig(durable)).toMatchObject({ filter_subject: `evt.${durable}.a` });
        // The running version is unaffected.
        await v1.publish(`evt.${durable}.a`, { id: 'still-mine' });
        await waitFor(() => seen.includes('still-mine'), 'the old version to keep consuming');
        await old.stop();
      } finally {
        await Promise.all([v1.close(), v2.close()]);
      }
    });

    it('parks with the durable’s maxDeliver on both paths (handler failing, ack wait running out) when another version changed it', async () => {
      const durable = durableName();
      const subject = `evt.${durable}.happened`;
      const v1 = await NatsBus.connect({ servers: server.url, name: 'v1', logger: quietLogger });
      const v2 = await NatsBus.connect({ servers: server.url, name: 'v2', logger: quietLogger });
      const release = deferred();
      const deliveries: [string, number][] = [];
      const handler = async (m: { data: { id: string }; deliveryCount: number }) => {
        deliveries.push([m.data.id, m.deliveryCount]);
        if (m.data.id === 'fails') throw new Error('provider refuses it');
        // 'held': retried until the last delivery, which hangs past the ack wait (JetStream's advisory parks it).
        if (m.deliveryCount < 3) return { retryInMs: 10 };
        await release.promise;
      };
      try {
        // Two instances of the old version (maxDeliver 2) keep running; the new one (maxDeliver 3)
        // starts, updates the durable, and is rolled back.
        const old = [
          await v1.consume({ durable, subject, maxDeliver: 2, ackWaitMs: 500 }, handler),
          await v1.consume({ durable, subject, maxDeliver: 2, ackWaitMs: 500 }, handler),
        ];
        await (await v2.consume({ durable, subject, maxDeliver: 3, ackWaitMs: 500 }, handler)).stop();

        await v1.publish(subject, { id: 'fails' });
        await v1.publish(subject, { id: 'held' });
        await waitFor(async () => (await v1.listParked({ durable })).length === 2, 'both messages parked', 15_000);
        const parked = await v1.listParked({ durable });
        release.resolve();
        await Promise.all(old.map((consumer) => consumer.stop()));

        const of = (id: string) => parked.find((message) => (message.data as { id: string }).id === id);
        expect(of('fails')).toMatchObject({ deliveryCount: 3, reason: 'provider refuses it' });
        expect(of('held')).toMatchObject({ deliveryCount: 3, reason: NOT_ACKED_ON_LAST_DELIVERY });
        expect(deliveries.filter(([id]) => id === 'fails').map(([, count]) => count)).toEqual([1, 2, 3]);
      } finally {
        release.resolve();
        await Promise.all([v1.close(), v2.close()]);
      }
    });
  });

  it('asks again for its idle lanes once a pull request expires on the server: a message published after a quiet spell is taken', async () => {
    const bus = await NatsBus.connect({ servers: server.url, name: 'quiet', logger: quietLogger });
    const root = `evt.quiet${Math.random().toString(36).slice(2, 8)}`;
    const durable = root.replace('.', '_');
    try {
      const seen: string[] = [];
      const consumer = await bus.consume<{ id: string }>({ durable, subject: `${root}.>`, lanes: 2 }, async (message) => void seen.push(message.data.id));
      await bus.publish(`${root}.happened`, { id: 'first' });
      await waitFor(() => seen.includes('first'), 'the first message');
      // Past the expiry of every pull request sent so far (PULL_EXPIRES_MS): the server said what
      // each did not bring (408), and the lanes asked again.
      await new Promise((resolve) => setTimeout(resolve, PULL_EXPIRES_MS + 1500));
      // Requests wait on the server for the idle lanes (each for one or more), never more than them.
      const nc = await connect({ servers: server.url });
      const waiting = (await (await nc.jetstreamManager()).consumers.info('CAMPAIGN_OPS_EVENTS', durable)).num_waiting;
      await nc.close();
      expect(waiting).toBeGreaterThanOrEqual(1);
      expect(waiting).toBeLessThanOrEqual(2);
      await bus.publish(`${root}.happened`, { id: 'after the quiet spell' });
      await waitFor(() => seen.includes('after the quiet spell'), 'the message published after the quiet spell', 1500);
      await consumer.stop();
    } finally {
      await bus.close();
    }
  }, 20_000);

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
      // Within less than the time a lost pull request is given up after (LanePulls): the lanes ask
      // again as the connection comes back, the server having lost the requests it held.
      await waitFor(() => seen.includes('after'), 'the message published after the restart', 5_000);
      await expect(bus.request(`rpc.${root}.echo`, { ok: 1 })).resolves.toEqual({ ok: 1 });

      await consumer.stop();
      // At least once: an ack the server had not yet processed or persisted when it went down means 'before' again.
      expect([...new Set(seen)]).toEqual(['before', 'after']);
    } finally {
      await bus.close();
    }
  });
});
