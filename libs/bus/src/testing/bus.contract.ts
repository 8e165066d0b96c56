import { randomBytes } from 'node:crypto';
import {
  Bus,
  BusRemoteError,
  BusTimeoutError,
  BusUnavailableError,
  ConsumerOptions,
  DeliveredMessage,
  HandlerOutcome,
  ParkedMessage,
  ParkedMessageNotFoundError,
} from '../bus.port';
import { deferred, sleep, waitFor } from './wait-for';

interface Item {
  id: string;
}

/** A delivery as a test sees it: what arrived, to which instance, and when. */
interface Seen {
  subject: string;
  id: string;
  headers: Record<string, string>;
  deliveryCount: number;
  instance: string;
  at: number;
}

/**
 * What every Bus adapter must do, through the port only. Each test opens a fresh bus and uses
 * unique subjects and durables, so adapters backed by a shared server or file need no reset.
 */
export function busContract(name: string, open: () => Promise<Bus>, cleanup?: () => Promise<void>): void {
  describe(`${name} satisfies the bus contract`, () => {
    let bus: Bus;

    beforeEach(async () => {
      bus = await open();
    });
    afterEach(async () => {
      await bus.close();
    });
    if (cleanup) afterAll(cleanup);

    describe('request/reply', () => {
      it('round-trips data and headers', async () => {
        const subject = `rpc.${unique()}.echo`;
        await bus.respond(subject, async (data, context) => ({ received: data, headers: context.headers }));

        const sent = { name: 'spring', budget: { amount: 1200, currency: 'EUR' }, tags: ['a', 'b'] };
        const reply = await bus.request(subject, sent, { headers: { 'x-request-id': 'req-1' } });

        expect(reply).toEqual({ received: sent, headers: { 'x-request-id': 'req-1' } });
      });

      it('copies data both ways, as over the wire', async () => {
        const subject = `rpc.${unique()}.state`;
        const state = { items: ['kept'] };
        await bus.respond(subject, async (data: { items?: string[] }) => {
          data.items = ['changed by responder'];
          return state;
        });

        const sent: { items?: string[] } = {};
        const reply = await bus.request<{ items: string[] }>(subject, sent);
        reply.items.push('changed by caller');

        expect(sent).toEqual({});
        expect(state).toEqual({ items: ['kept'] });
      });

      it('routes requests to wildcard responders', async () => {
        const root = `rpc.${unique()}`;
        await bus.respond(`${root}.accounts.*`, async (_, context) => `one token: ${context.subject}`);
        await bus.respond(`${root}.dispatches.>`, async (_, context) => `the rest: ${context.subject}`);

        await expect(bus.request(`${root}.accounts.acct_1`, {})).resolves.toBe(`one token: ${root}.accounts.acct_1`);
        await expect(bus.request(`${root}.dispatches.dsp_1.status`, {})).resolves.toBe(`the rest: ${root}.dispatches.dsp_1.status`);
        await expect(bus.request(`${root}.accounts.acct_1.keys`, {}, { timeoutMs: 1000 })).rejects.toBeInstanceOf(BusUnavailableError);
      });

      it('rejects with BusTimeoutError when no reply comes in time', async () => {
        const subject = `rpc.${unique()}.slow`;
        const release = deferred();
        // The responder cannot answer before the request has failed: only the timeout can end it.
        await bus.respond(subject, () => release.promise);

        const started = Date.now();
        try {
          await expect(bus.request(subject, {}, { timeoutMs: 150 })).rejects.toBeInstanceOf(BusTimeoutError);
          expect(Date.now() - started).toBeLessThan(2000);
        } finally {
          release.resolve();
        }
      });

      it('rejects with BusUnavailableError when nobody responds on the subject', async () => {
        await expect(bus.request(`rpc.${unique()}.nobody`, {}, { timeoutMs: 1000 })).rejects.toBeInstanceOf(BusUnavailableError);
      });

      it("rejects with BusRemoteError carrying the responder's message", async () => {
        const subject = `rpc.${unique()}.failing`;
        await bus.respond(subject, async () => {
          throw new Error('account acct_1 is suspended');
        });

        const error = await bus.request(subject, {}).catch((caught: unknown) => caught);

        expect(error).toBeInstanceOf(BusRemoteError);
        expect((error as BusRemoteError).message).toBe('account acct_1 is suspended');
      });

      it('shares the requests of a subject between responders', async () => {
        const subject = `rpc.${unique()}.shared`;
        const handled = { first: 0, second: 0 };
        await bus.respond(subject, async () => ++handled.first);
        await bus.respond(subject, async () => ++handled.second);

        for (let i = 0; i < 40; i++) await bus.request(subject, { i });

        expect(handled.first + handled.second).toBe(40);
        expect(handled.first).toBeGreaterThan(0);
        expect(handled.second).toBeGreaterThan(0);
      });

      it('answers ping while open and rejects requests with BusUnavailableError once closed', async () => {
        await expect(bus.ping()).resolves.toBeUndefined();
        await bus.close();
        await expect(bus.request(`rpc.${unique()}.closed`, {})).rejects.toBeInstanceOf(BusUnavailableError);
      });
    });

    describe('durable publish/consume', () => {
      it('delivers every published message once, with its headers, when acked', async () => {
        const { subject, options } = durableSetup();
        const ids = Array.from({ length: 20 }, (_, i) => `m${i}`);
        for (const id of ids) await bus.publish(subject, { id }, { headers: { 'x-correlation-id': `c-${id}` } });

        const seen: Seen[] = [];
        const consumer = await bus.consume(options, record(seen));
        await waitFor(() => seen.length >= ids.length, 'all messages');
        await settled(bus, options.durable);
        await consumer.stop();

        expect(seen.map((message) => message.id)).toEqual(ids);
        expect(seen.every((message) => message.deliveryCount === 1 && message.subject === subject)).toBe(true);
        expect(seen[3].headers).toEqual({ 'x-correlation-id': 'c-m3' });
      });

      it('drops a second publish with the same msgId', async () => {
        const { subject, options } = durableSetup();
        const msgId = `msg-${unique()}`;
        await bus.publish(subject, { id: 'original' }, { msgId });
        await bus.publish(subject, { id: 'duplicate' }, { msgId });
        await bus.publish(subject, { id: 'next' }, { msgId: `${msgId}-next` });

        const seen: Seen[] = [];
        const consumer = await bus.consume(options, record(seen));
        await waitFor(() => seen.some((message) => message.id === 'next'), 'the message after the duplicate');
        // Had the duplicate been stored, it would be delivered or still pending now.
        await settled(bus, options.durable);
        await consumer.stop();

        expect(seen.map((message) => message.id)).toEqual(['original', 'next']);
      });

      it("delivers only messages matching the consumer's subject", async () => {
        const root = `evt.${unique()}`;
        const durable = `d_${unique()}`;
        const seen: Seen[] = [];
        const consumer = await bus.consume({ durable, subject: `${root}.a.>` }, record(seen));
        await bus.publish(`${root}.b.x`, { id: 'other' });
        await bus.publish(`${root}.a`, { id: 'parent' });
        await bus.publish(`${root}.a.y.z`, { id: 'wanted' });

        await waitFor(() => seen.length >= 1, 'the matching message');
        await settled(bus, durable);
        await consumer.stop();

        expect(seen.map((message) => [message.subject, message.id])).toEqual([[`${root}.a.y.z`, 'wanted']]);
      });

      it('redelivers after the retryInMs the handler asked for', async () => {
        const { subject, options } = durableSetup();
        const seen: Seen[] = [];
        const consumer = await bus.consume(
          options,
          record(seen, (message) => (message.deliveryCount === 1 ? { retryInMs: 200 } : undefined)),
        );
        await bus.publish(subject, { id: 'later' });

        await waitFor(() => seen.length >= 2, 'the redelivery');
        await settled(bus, options.durable);
        await consumer.stop();

        expect(seen.map((message) => message.deliveryCount)).toEqual([1, 2]);
        expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(190);
      });

      it('redelivers a message whose handler threw', async () => {
        const { subject, options } = durableSetup();
        const seen: Seen[] = [];
        const consumer = await bus.consume(
          options,
          record(seen, (message) => {
            if (message.deliveryCount === 1) throw new Error('provider briefly down');
          }),
        );
        await bus.publish(subject, { id: 'flaky' });

        await waitFor(() => seen.length >= 2, 'the redelivery after the failure', 8000);
        await settled(bus, options.durable);
        await consumer.stop();

        expect(seen.map((message) => [message.id, message.deliveryCount])).toEqual([
          ['flaky', 1],
          ['flaky', 2],
        ]);
      });

      it('shares a durable between instances without duplicates', async () => {
        const { subject, options } = durableSetup();
        const seen: Seen[] = [];
        const slowly = async () => {
          await sleep(5);
        };
        const first = await bus.consume(options, record(seen, slowly, 'first'));
        const second = await bus.consume(options, record(seen, slowly, 'second'));
        const ids = Array.from({ length: 30 }, (_, i) => `m${i}`);
        for (const id of ids) await bus.publish(subject, { id });

        await waitFor(() => seen.length >= ids.length, 'all messages');
        await settled(bus, options.durable);
        await Promise.all([first.stop(), second.stop()]);

        expect(seen.map((message) => message.id).sort()).toEqual([...ids].sort());
        expect(seen.some((message) => message.instance === 'first')).toBe(true);
        expect(seen.some((message) => message.instance === 'second')).toBe(true);
      });

      it('handles as many messages at once as the consumer has lanes, never more, and settles them all before stop resolves', async () => {
        const { subject, options } = durableSetup({ lanes: 3 });
        let running = 0;
        let most = 0;
        const release = deferred<void>();
        const handled: string[] = [];
        const consumer = await bus.consume<Item>(options, async ({ data }) => {
          running++;
          most = Math.max(most, running);
          await release.promise;
          await sleep(2);
          running--;
          handled.push(data.id);
        });
        const ids = Array.from({ length: 12 }, (_, i) => `m${i}`);
        for (const id of ids) await bus.publish(subject, { id });
        await waitFor(() => running === 3, 'three lanes busy');
        // A fourth is not taken while the three run: it waits on the bus, not in this process.
        await sleep(200);
        expect(running).toBe(3);
        expect(await bus.pending(options.durable)).toBe(ids.length);
        release.resolve();
        await waitFor(() => handled.length === ids.length, 'every message handled');
        await settled(bus, options.durable);
        await consumer.stop();
        expect(most).toBe(3);
        expect([...handled].sort()).toEqual([...ids].sort());
      });

      it('refuses lanes that are not a whole number of at least 1', async () => {
        for (const lanes of [0, -1, 1.5]) await expect(bus.consume({ ...durableSetup().options, lanes }, async () => undefined)).rejects.toThrow(/lanes/);
      });

      it('resumes a durable after stop with only the messages not yet acked', async () => {
        const { subject, options } = durableSetup();
        const seen: Seen[] = [];
        const before = await bus.consume(options, record(seen, undefined, 'before'));
        await bus.publish(subject, { id: 'a' });
        await bus.publish(subject, { id: 'b' });
        await waitFor(() => seen.length >= 2, 'the first messages');
        await before.stop();

        await bus.publish(subject, { id: 'while-stopped' });
        const after = await bus.consume(options, record(seen, undefined, 'after'));
        await waitFor(() => seen.length >= 3, 'the message published while stopped');
        await settled(bus, options.durable);
        await after.stop();

        expect(seen.map((message) => [message.instance, message.id])).toEqual([
          ['before', 'a'],
          ['before', 'b'],
          ['after', 'while-stopped'],
        ]);
      });

      it('counts what a durable has not acked yet as pending', async () => {
        const { subject, options } = durableSetup();
        const seen: Seen[] = [];
        const first = await bus.consume(options, record(seen));
        await bus.publish(subject, { id: 'a' });
        await waitFor(() => seen.length >= 1, 'the first message');
        await first.stop();
        await bus.publish(subject, { id: 'b' });
        await bus.publish(subject, { id: 'c' });
        await waitFor(async () => (await bus.pending(options.durable)) === 2, 'two pending messages');
        const second = await bus.consume(options, record(seen));
        await waitFor(() => seen.length >= 3, 'the pending messages');
        await waitFor(async () => (await bus.pending(options.durable)) === 0, 'nothing pending');
        await second.stop();
        expect(await bus.pending(`d_${unique()}`)).toBe(0);
      });

      it("tells a durable's progress: pending as pending() counts it, and every settled delivery (acked or to be retried) counted once", async () => {
        const { subject, options } = durableSetup();
        expect(await bus.progress(options.durable)).toEqual({ pending: 0, settled: 0 });
        const seen: string[] = [];
        let retried = false;
        const handler = async (message: DeliveredMessage<{ id: string }>) => {
          seen.push(message.data.id);
          // `c` once asks to be retried: its first delivery is settled, then its second.
          if (message.data.id === 'c' && !retried) return ((retried = true), { retryInMs: 50 });
        };
        const first = await bus.consume(options, handler);
        await bus.publish(subject, { id: 'a' });
        await waitFor(async () => (await bus.progress(options.durable)).settled === 1, 'one settled delivery');
        await first.stop();
        await bus.publish(subject, { id: 'b' });
        await bus.publish(subject, { id: 'c' });
        await waitFor(async () => (await bus.progress(options.durable)).pending === 2, 'two pending messages');
        const second = await bus.consume(options, handler);
        await waitFor(() => seen.length >= 4, 'four deliveries');
        await waitFor(async () => (await bus.progress(options.durable)).pending === 0, 'nothing pending');
        await waitFor(async () => (await bus.progress(options.durable)).settled === 4, 'four settled deliveries');
        await second.stop();
        expect(seen).toEqual(['a', 'b', 'c', 'c']);
      });

      it('redelivers a message not acked within ackWaitMs', async () => {
        const { subject, options } = durableSetup({ ackWaitMs: 500 });
        const seen: Seen[] = [];
        const release = deferred();
        // The first instance holds the message past its ack wait, as if its process hung.
        const stuck = await bus.consume(
          options,
          record(seen, () => release.promise, 'stuck'),
        );
        await bus.publish(subject, { id: 'held' });
        await waitFor(() => seen.length >= 1, 'the first delivery');
        const healthy = await bus.consume(options, record(seen, undefined, 'healthy'));
        try {
          await waitFor(() => seen.length >= 2, 'the redelivery after ackWait', 5000);
        } finally {
          release.resolve();
          await Promise.all([stuck.stop(), healthy.stop()]);
        }

        expect(seen.map((message) => [message.instance, message.deliveryCount])).toEqual([
          ['stuck', 1],
          ['healthy', 2],
        ]);
        expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(450);
      });

      it('keeps a delivery past ackWaitMs while its handler runs, up to maxHandlingMs (a long call is not handed to another instance)', async () => {
        const { subject, options } = durableSetup({ ackWaitMs: 500, maxHandlingMs: 10_000 });
        const seen: Seen[] = [];
        const release = deferred();
        const slow = await bus.consume(
          options,
          record(seen, () => release.promise, 'slow'),
        );
        await bus.publish(subject, { id: 'long' });
        await waitFor(() => seen.length >= 1, 'the first delivery');
        const other = await bus.consume(options, record(seen, undefined, 'other'));
        // Three ack waits: without renewal the other instance would have had it after the first.
        await new Promise((resolve) => setTimeout(resolve, 1_600));
        release.resolve();
        await settled(bus, options.durable);
        await Promise.all([slow.stop(), other.stop()]);
        expect(seen.map((message) => [message.instance, message.deliveryCount])).toEqual([['slow', 1]]);
      });

      it('stops keeping a delivery once maxHandlingMs has passed: a handler that hangs loses it ackWaitMs later', async () => {
        const { subject, options } = durableSetup({ ackWaitMs: 400, maxHandlingMs: 800 });
        const seen: Seen[] = [];
        const release = deferred();
        const stuck = await bus.consume(
          options,
          record(seen, () => release.promise, 'stuck'),
        );
        await bus.publish(subject, { id: 'hung' });
        await waitFor(() => seen.length >= 1, 'the first delivery');
        const healthy = await bus.consume(options, record(seen, undefined, 'healthy'));
        try {
          await waitFor(() => seen.length >= 2, 'the redelivery after maxHandlingMs', 6000);
        } finally {
          release.resolve();
          await Promise.all([stuck.stop(), healthy.stop()]);
        }
        expect(seen.map((message) => [message.instance, message.deliveryCount])).toEqual([
          ['stuck', 1],
          ['healthy', 2],
        ]);
        // Renewed past the first ack wait (400 ms), given up on around maxHandlingMs (800 ms).
        expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(550);
      });

      it('stops delivering a message after maxDeliver deliveries, and goes on with the next', async () => {
        const { subject, options } = durableSetup({ maxDeliver: 2 });
        const seen: Seen[] = [];
        const consumer = await bus.consume(
          options,
          record(seen, (message) => (message.data.id === 'poison' ? { retryInMs: 50 } : undefined)),
        );
        await bus.publish(subject, { id: 'poison' });
        await waitFor(() => seen.length >= 2, 'both allowed deliveries');
        await parkedOf(bus, options.durable, 1);
        await bus.publish(subject, { id: 'healthy' });
        await waitFor(() => seen.some((message) => message.id === 'healthy'), 'the next message');
        await settled(bus, options.durable);
        await consumer.stop();

        expect(seen.map((message) => [message.id, message.deliveryCount])).toEqual([
          ['poison', 1],
          ['poison', 2],
          ['healthy', 1],
        ]);
        expect(await bus.listParked({ durable: options.durable })).toEqual([
          expect.objectContaining({
            durable: options.durable,
            subject,
            data: { id: 'poison' },
            deliveryCount: 2,
            reason: 'retry asked on the last allowed delivery',
          }),
        ]);
      });
    });

    describe('parked messages', () => {
      it('parks a message whose handler keeps throwing after maxDeliver deliveries, and goes on with the next', async () => {
        const { subject, options } = durableSetup({ maxDeliver: 2 });
        const seen: Seen[] = [];
        const consumer = await bus.consume(
          options,
          record(seen, (message) => {
            if (message.data.id === 'poison') throw new Error('provider rejected the payload\n(400 Bad Request)');
          }),
        );
        const publishedAt = Date.now();
        await bus.publish(subject, { id: 'poison' }, { headers: { 'x-correlation-id': 'c-poison' } });

        const parked = await parkedOf(bus, options.durable, 1);
        await bus.publish(subject, { id: 'next' });
        await waitFor(() => seen.some((message) => message.id === 'next'), 'the message after the parked one');
        // Parked is not pending: nothing is left to deliver.
        await settled(bus, options.durable);
        await consumer.stop();

        expect(parked).toEqual([
          {
            id: expect.any(String),
            durable: options.durable,
            subject,
            data: { id: 'poison' },
            headers: { 'x-correlation-id': 'c-poison' },
            deliveryCount: 2,
            parkedAt: expect.any(String),
            reason: 'provider rejected the payload (400 Bad Request)',
          },
        ]);
        expect(Date.parse(parked[0].parkedAt)).toBeGreaterThanOrEqual(publishedAt - 1000);
        expect(Date.parse(parked[0].parkedAt)).toBeLessThanOrEqual(Date.now());
        expect(seen.map((message) => [message.id, message.deliveryCount])).toEqual([
          ['poison', 1],
          ['poison', 2],
          ['next', 1],
        ]);
      });

      it('replays a parked message to the durable that parked it, once, and drops it from the list', async () => {
        const { subject, options } = durableSetup({ maxDeliver: 2 });
        const seen: Seen[] = [];
        let fixed = false;
        const consumer = await bus.consume(
          options,
          record(seen, () => {
            if (!fixed) throw new Error('downstream rejects it');
          }),
        );
        // Another durable on the same subject handled the message at once: a replay is not for it.
        const otherSeen: Seen[] = [];
        const otherDurable = `d_${unique()}`;
        const other = await bus.consume({ durable: otherDurable, subject }, record(otherSeen, undefined, 'other'));
        // Within the de-duplication window of its msgId: the replay must still get through.
        await bus.publish(subject, { id: 'poison' }, { msgId: `msg-${unique()}`, headers: { 'x-correlation-id': 'c-poison' } });
        const [parked] = await parkedOf(bus, options.durable, 1);

        fixed = true;
        await bus.replayParked(parked.id);
        await waitFor(() => seen.length >= 3, 'the replayed delivery');
        await waitFor(async () => (await bus.listParked({ durable: options.durable })).length === 0, 'the parked list to be empty');
        await settled(bus, options.durable);
        // The replay is stored by now: had it been given to the other durable too, it would show there.
        await settled(bus, otherDurable);
        await Promise.all([consumer.stop(), other.stop()]);

        expect(seen.map((message) => [message.id, message.deliveryCount])).toEqual([
          ['poison', 1],
          ['poison', 2],
          ['poison', 1],
        ]);
        expect(seen[2]).toMatchObject({ subject, headers: { 'x-correlation-id': 'c-poison' } });
        expect(otherSeen.map((message) => [message.id, message.deliveryCount])).toEqual([['poison', 1]]);
        await expect(bus.replayParked(parked.id)).rejects.toBeInstanceOf(ParkedMessageNotFoundError);
      });

      it('lists parked messages oldest first, per durable, up to the limit', async () => {
        const { subject, options } = durableSetup({ maxDeliver: 1 });
        const consumer = await bus.consume(options, async () => ({ retryInMs: 10 }));
        await bus.publish(subject, { id: 'first' });
        await parkedOf(bus, options.durable, 1);
        await bus.publish(subject, { id: 'second' });
        const both = await parkedOf(bus, options.durable, 2);
        await consumer.stop();

        expect(both.map((message) => message.data)).toEqual([{ id: 'first' }, { id: 'second' }]);
        expect(new Set(both.map((message) => message.id)).size).toBe(2);
        expect((await bus.listParked({ durable: options.durable, limit: 1 })).map((message) => message.data)).toEqual([{ id: 'first' }]);
        expect(await bus.listParked({ durable: `d_${unique()}` })).toEqual([]);
        const all = await bus.listParked({ limit: 10_000 });
        expect(all.filter((message) => message.durable === options.durable).map((message) => message.id)).toEqual(both.map((message) => message.id));
      });

      it('parks a message not acked within ackWaitMs on its last allowed delivery', async () => {
        const { subject, options } = durableSetup({ maxDeliver: 1, ackWaitMs: 500 });
        const seen: Seen[] = [];
        const release = deferred();
        // The first instance hangs on the only allowed delivery; the second keeps asking for work.
        const stuck = await bus.consume(
          options,
          record(seen, () => release.promise.then(() => Promise.reject(new Error('too late'))), 'stuck'),
        );
        await bus.publish(subject, { id: 'held' });
        await waitFor(() => seen.length >= 1, 'the first delivery');
        const healthy = await bus.consume(options, record(seen, undefined, 'healthy'));
        let parked: ParkedMessage[];
        try {
          parked = await parkedOf(bus, options.durable, 1);
        } finally {
          release.resolve();
          await Promise.all([stuck.stop(), healthy.stop()]);
        }

        expect(parked).toEqual([
          expect.objectContaining({
            durable: options.durable,
            subject,
            data: { id: 'held' },
            deliveryCount: 1,
            reason: 'not acked within ackWaitMs on the last allowed delivery',
          }),
        ]);
        // The hung handler failing late changes nothing: parked once, delivered once. stop() returned
        // once that failure was handled; a new instance of the durable gets only what comes next.
        const after = await bus.consume(options, record(seen, undefined, 'after'));
        await bus.publish(subject, { id: 'next' });
        await waitFor(() => seen.some((message) => message.id === 'next'), 'the next message');
        await settled(bus, options.durable);
        await after.stop();
        expect(await bus.listParked({ durable: options.durable })).toEqual(parked);
        expect(seen.map((message) => [message.instance, message.id, message.deliveryCount])).toEqual([
          ['stuck', 'held', 1],
          ['after', 'next', 1],
        ]);
      });

      it('rejects replaying an id that is not parked', async () => {
        for (const id of ['no-such-message', '987654321', `d_${unique()}:1`, '']) {
          await expect(bus.replayParked(id)).rejects.toBeInstanceOf(ParkedMessageNotFoundError);
        }
      });

      it('rejects a limit below 1', async () => {
        await expect(bus.listParked({ limit: 0 })).rejects.toThrow(/limit/);
      });
    });
  });
}

/**
 * Waits until the durable has nothing pending: every message it was given is acked or parked. The
 * port redelivers only what is not acked, so nothing more can come: this, not a pause, is what
 * proves a message is not delivered again.
 */
async function settled(bus: Bus, durable: string): Promise<void> {
  await waitFor(async () => (await bus.pending(durable)) === 0, `${durable} to have nothing pending`, 8000);
}

/** Waits (past a failed delivery's 1 s backoff) until the durable has `count` parked messages, and returns them. */
async function parkedOf(bus: Bus, durable: string, count: number): Promise<ParkedMessage[]> {
  let parked: ParkedMessage[] = [];
  await waitFor(async () => (parked = await bus.listParked({ durable })).length >= count, `${count} parked message(s) of ${durable}`, 8000);
  return parked;
}

function unique(): string {
  return randomBytes(5).toString('hex');
}

/** A fresh subject and a durable consuming exactly it. */
function durableSetup(overrides: Partial<ConsumerOptions> = {}): { subject: string; options: ConsumerOptions } {
  const subject = `evt.${unique()}.happened`;
  return { subject, options: { durable: `d_${unique()}`, subject, ...overrides } };
}

/** A handler that records each delivery, then lets `then` decide the outcome (ack by default). */
function record(
  seen: Seen[],
  then?: (message: DeliveredMessage<Item>) => HandlerOutcome | Promise<HandlerOutcome>,
  instance = 'only',
): (message: DeliveredMessage<Item>) => Promise<HandlerOutcome> {
  return async (message) => {
    seen.push({
      subject: message.subject,
      id: message.data.id,
      headers: message.headers,
      deliveryCount: message.deliveryCount,
      instance,
      at: Date.now(),
    });
    return then?.(message);
  };
}
