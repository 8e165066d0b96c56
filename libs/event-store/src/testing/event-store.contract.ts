import { ulid, ulidToUuid } from '@campaign-ops/ids';
import { EventStore, EventToAppend, RecordedEvent, SubscribeToAllOptions, Subscription, WrongExpectedRevisionError } from '../event-store.port';

/**
 * The behaviour every EventStore adapter must have. Only the port is used, and every test works
 * on streams of its own (unique names), so the suite can run against a shared server too.
 *
 * Positions are opaque to consumers, but to check that they increase the suite compares them as
 * non-negative integers written in decimal: adapters must encode them so.
 *
 * `open` is called before each test; after it the store is closed, then `cleanup` (if any) runs,
 * e.g. to delete files.
 */
export function eventStoreContract(name: string, open: () => Promise<EventStore>, cleanup?: (store: EventStore) => Promise<void>): void {
  describe(`EventStore contract: ${name}`, () => {
    const ISO_UTC_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

    let store: EventStore;
    let subscriptions: Subscription[];
    /** Unique per test: stream names and prefixes built from it are the test's own. */
    let tag: string;

    beforeEach(async () => {
      store = await open();
      subscriptions = [];
      tag = ulid().toLowerCase();
    });

    afterEach(async () => {
      await Promise.all(subscriptions.map((subscription) => subscription.close()));
      await store.close();
      await cleanup?.(store);
    });

    const streamIn = (category: string, id: string | number = 1) => `${category}${tag}-${id}`;

    const newEvent = (type = 'Tested', data: Record<string, unknown> = {}): EventToAppend => ({
      id: ulidToUuid(ulid()),
      type,
      data,
    });

    const newEvents = (count: number): EventToAppend[] => Array.from({ length: count }, (_, i) => newEvent('Tested', { n: i }));

    /** Subscribes and records what it is given; the subscription is closed after the test. */
    function record(options: Partial<SubscribeToAllOptions> = {}) {
      const events: RecordedEvent[] = [];
      const errors: Error[] = [];
      const subscription = store.subscribeToAll({
        onEvent: async (event) => {
          events.push(event);
        },
        onError: (error) => errors.push(error),
        ...options,
      });
      subscriptions.push(subscription);
      return { events, errors, subscription };
    }

    async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }

    /**
     * Appends to `streamId` and returns once another subscription, live before the append, has
     * received everything in the stream (`total` events). Order is promised within one subscription
     * only, so this is how a test shows a subscription that must stay silent had its chance: a
     * live one on the same store got the event.
     */
    async function appendWitnessed(streamId: string, events: EventToAppend[], expectedRevision: number, total: number): Promise<void> {
      const witness = record({ streamPrefixes: [streamId] });
      await waitFor(() => witness.events.length === expectedRevision + 1, 'the witness to catch up');
      await store.append(streamId, events, { expectedRevision });
      await waitFor(() => witness.events.length === total, 'the witness to receive the new events');
    }

    const ofStreams = (events: RecordedEvent[], streamIds: string[]) => events.filter((event) => streamIds.includes(event.streamId));

    function expectStrictlyIncreasing(positions: string[]): void {
      for (let i = 1; i < positions.length; i++) {
        expect(BigInt(positions[i])).toBeGreaterThan(BigInt(positions[i - 1]));
      }
    }

    describe('append', () => {
      it('creates a stream with no_stream and reads it back', async () => {
        const streamId = streamIn('order');
        const events = [newEvent('Placed', { total: 3 }), newEvent('Paid', { by: 'card' })];

        const result = await store.append(streamId, events, { expectedRevision: 'no_stream' });

        const read = await store.readStream(streamId);
        expect(read.map(({ id, streamId, type, revision, data }) => ({ id, streamId, type, revision, data }))).toEqual([
          { id: events[0].id, streamId, type: 'Placed', revision: 0, data: { total: 3 } },
          { id: events[1].id, streamId, type: 'Paid', revision: 1, data: { by: 'card' } },
        ]);
        expect(result).toEqual({ nextRevision: 1, position: read[1].position });
      });

      it('accepts every expectation that holds', async () => {
        const streamId = streamIn('order');
        await expect(store.append(streamId, [newEvent()], { expectedRevision: 'any' })).resolves.toMatchObject({
          nextRevision: 0,
        });
        await expect(store.append(streamId, [newEvent()], { expectedRevision: 'stream_exists' })).resolves.toMatchObject({
          nextRevision: 1,
        });
        await expect(store.append(streamId, [newEvent()], { expectedRevision: 1 })).resolves.toMatchObject({
          nextRevision: 2,
        });
        await expect(store.append(streamId, [newEvent()], { expectedRevision: 'any' })).resolves.toMatchObject({
          nextRevision: 3,
        });
      });

      it.each([
        { expectedRevision: 'no_stream' as const, exists: true, actual: 1 },
        { expectedRevision: 0, exists: true, actual: 1 },
        { expectedRevision: 2, exists: true, actual: 1 },
        { expectedRevision: 'stream_exists' as const, exists: false, actual: 'no_stream' },
        { expectedRevision: 0, exists: false, actual: 'no_stream' },
      ])('rejects expected revision $expectedRevision when the stream is at $actual, writing nothing', async ({ expectedRevision, exists, actual }) => {
        const streamId = streamIn('order');
        if (exists) await store.append(streamId, newEvents(2), { expectedRevision: 'no_stream' });
        const before = await store.readStream(streamId);

        const appending = store.append(streamId, [newEvent()], { expectedRevision });

        await expect(appending).rejects.toBeInstanceOf(WrongExpectedRevisionError);
        await expect(appending).rejects.toMatchObject({ streamId, expected: expectedRevision, actual });
        expect(await store.readStream(streamId)).toEqual(before);
      });

      it('numbers revisions from 0, contiguously, across appends', async () => {
        const streamId = streamIn('order');
        const results = [
          await store.append(streamId, newEvents(1), { expectedRevision: 'no_stream' }),
          await store.append(streamId, newEvents(2), { expectedRevision: 0 }),
          await store.append(streamId, newEvents(3), { expectedRevision: 2 }),
        ];

        expect(results.map((result) => result.nextRevision)).toEqual([0, 2, 5]);
        expect((await store.readStream(streamId)).map((event) => event.revision)).toEqual([0, 1, 2, 3, 4, 5]);
      });

      it('gives increasing positions across streams, the result carrying the last event’s', async () => {
        const [a, b, c] = [streamIn('a'), streamIn('b'), streamIn('c')];
        const results = [
          await store.append(a, newEvents(2), { expectedRevision: 'no_stream' }),
          await store.append(b, newEvents(1), { expectedRevision: 'no_stream' }),
          await store.append(a, newEvents(1), { expectedRevision: 1 }),
          await store.append(c, newEvents(3), { expectedRevision: 'no_stream' }),
        ];

        const [readA, readB, readC] = await Promise.all([a, b, c].map((streamId) => store.readStream(streamId)));
        const inAppendOrder = [readA[0], readA[1], readB[0], readA[2], readC[0], readC[1], readC[2]];
        expectStrictlyIncreasing(inAppendOrder.map((event) => event.position));
        expect(results.map((result) => result.position)).toEqual([readA[1], readB[0], readA[2], readC[2]].map((event) => event.position));
      });

      it('treats a retry of the same append as done: same result, nothing duplicated', async () => {
        const streamId = streamIn('order');
        const first = newEvents(2);
        const second = newEvents(1);

        const created = await store.append(streamId, first, { expectedRevision: 'no_stream' });
        await expect(store.append(streamId, first, { expectedRevision: 'no_stream' })).resolves.toEqual(created);
        const extended = await store.append(streamId, second, { expectedRevision: 1 });
        await expect(store.append(streamId, second, { expectedRevision: 1 })).resolves.toEqual(extended);
        // Even once the stream has moved on, a late retry still gets its original answer.
        await expect(store.append(streamId, first, { expectedRevision: 'no_stream' })).resolves.toEqual(created);

        expect((await store.readStream(streamId)).map((event) => event.id)).toEqual([...first, ...second].map((e) => e.id));
      });

      it('round-trips data and metadata', async () => {
        const streamId = streamIn('order');
        const data = {
          text: 'héllo “world” 🚀',
          number: 12.5,
          negative: -3,
          flag: false,
          nothing: null,
          list: [1, 'two', { three: 3 }],
          nested: { deeper: { deepest: [] } },
        };
        const metadata = { correlationId: 'req_1', causationId: 'evt_2', actor: { kind: 'api-key', id: 'key_3' } };

        await store.append(streamId, [{ ...newEvent('WithMetadata', data), metadata }, newEvent('WithoutMetadata', {})], {
          expectedRevision: 'no_stream',
        });

        const [withMetadata, withoutMetadata] = await store.readStream(streamId);
        expect(withMetadata.data).toEqual(data);
        expect(withMetadata.metadata).toEqual(metadata);
        expect(withoutMetadata.data).toEqual({});
        expect(withoutMetadata.metadata).toEqual({});
      });

      it('records occurredAt as ISO 8601 UTC with milliseconds, at append time', async () => {
        const streamId = streamIn('order');
        const before = Date.now();
        await store.append(streamId, newEvents(1), { expectedRevision: 'no_stream' });
        const after = Date.now();

        const [event] = await store.readStream(streamId);
        expect(event.occurredAt).toMatch(ISO_UTC_MILLIS);
        // Generous bounds: a server's clock may differ from ours.
        expect(Date.parse(event.occurredAt)).toBeGreaterThan(before - 60_000);
        expect(Date.parse(event.occurredAt)).toBeLessThan(after + 60_000);
      });
    });

    describe('readStream', () => {
      let streamId: string;

      beforeEach(async () => {
        streamId = streamIn('order');
        await store.append(streamId, newEvents(2), { expectedRevision: 'no_stream' });
        await store.append(streamId, newEvents(3), { expectedRevision: 1 });
      });

      const revisions = async (options?: Parameters<EventStore['readStream']>[1]) => (await store.readStream(streamId, options)).map((event) => event.revision);

      it('reads forwards by default and backwards on request', async () => {
        expect(await revisions()).toEqual([0, 1, 2, 3, 4]);
        expect(await revisions({ direction: 'forwards' })).toEqual([0, 1, 2, 3, 4]);
        expect(await revisions({ direction: 'backwards' })).toEqual([4, 3, 2, 1, 0]);
      });

      it('starts at fromRevision, inclusive, in either direction', async () => {
        expect(await revisions({ fromRevision: 2 })).toEqual([2, 3, 4]);
        expect(await revisions({ direction: 'backwards', fromRevision: 2 })).toEqual([2, 1, 0]);
        expect(await revisions({ fromRevision: 4 })).toEqual([4]);
        expect(await revisions({ fromRevision: 5 })).toEqual([]);
      });

      it('returns at most maxCount events', async () => {
        expect(await revisions({ maxCount: 2 })).toEqual([0, 1]);
        expect(await revisions({ direction: 'backwards', maxCount: 2 })).toEqual([4, 3]);
        expect(await revisions({ fromRevision: 1, maxCount: 2 })).toEqual([1, 2]);
        expect(await revisions({ direction: 'backwards', fromRevision: 3, maxCount: 2 })).toEqual([3, 2]);
        expect(await revisions({ maxCount: 50 })).toEqual([0, 1, 2, 3, 4]);
      });

      it('reads a missing stream as empty', async () => {
        const missing = streamIn('missing');
        expect(await store.readStream(missing)).toEqual([]);
        expect(await store.readStream(missing, { direction: 'backwards' })).toEqual([]);
        expect(await store.readStream(missing, { fromRevision: 3, maxCount: 1 })).toEqual([]);
      });
    });

    describe('readAll', () => {
      /** Every page of a read from `fromPosition`, each of at most `maxCount`, until a short page. */
      async function readPages(options: { fromPosition?: string; maxCount: number; streamPrefixes?: string[] }): Promise<RecordedEvent[][]> {
        const pages: RecordedEvent[][] = [];
        let fromPosition = options.fromPosition;
        for (;;) {
          const page = await store.readAll({ ...options, fromPosition });
          pages.push(page);
          if (page.length < options.maxCount) return pages;
          fromPosition = page[page.length - 1].position;
        }
      }

      it('reads the streams of the prefixes in global order, page by page, as a subscription delivers them', async () => {
        const [a, b, other] = [streamIn('a'), streamIn('b'), streamIn('c')];
        await store.append(a, newEvents(2), { expectedRevision: 'no_stream' });
        await store.append(other, newEvents(1), { expectedRevision: 'no_stream' });
        await store.append(b, newEvents(2), { expectedRevision: 'no_stream' });
        await store.append(a, newEvents(1), { expectedRevision: 1 });
        const streamPrefixes = [`a${tag}`, `b${tag}`];

        const pages = await readPages({ maxCount: 2, streamPrefixes });

        expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
        const read = pages.flat();
        expect(read.map((event) => [event.streamId, event.revision])).toEqual([
          [a, 0],
          [a, 1],
          [b, 0],
          [b, 1],
          [a, 2],
        ]);
        expectStrictlyIncreasing(read.map((event) => event.position));
        const { events } = record({ streamPrefixes });
        await waitFor(() => events.length === 5, 'the subscription to deliver the 5 events');
        expect(read).toEqual(events);
      });

      it('starts strictly after fromPosition, and reads nothing after the last event', async () => {
        const a = streamIn('a');
        await store.append(a, newEvents(4), { expectedRevision: 'no_stream' });
        const all = await store.readAll({ maxCount: 10, streamPrefixes: [a] });

        const rest = await store.readAll({ fromPosition: all[1].position, maxCount: 10, streamPrefixes: [a] });

        expect(rest).toEqual(all.slice(2));
        expect(await store.readAll({ fromPosition: all[3].position, maxCount: 10, streamPrefixes: [a] })).toEqual([]);
      });

      it('reads every stream without prefixes, up to lastPosition', async () => {
        const before = await store.lastPosition();
        const [a, b] = [streamIn('a'), streamIn('b')];
        await store.append(a, newEvents(1), { expectedRevision: 'no_stream' });
        const appended = await store.append(b, newEvents(2), { expectedRevision: 'no_stream' });

        const last = await store.lastPosition();
        const read = (await readPages({ fromPosition: before ?? undefined, maxCount: 2 })).flat();

        expect(ofStreams(read, [a, b]).map((event) => [event.streamId, event.revision])).toEqual([
          [a, 0],
          [b, 0],
          [b, 1],
        ]);
        expectStrictlyIncreasing(read.map((event) => event.position));
        expect(BigInt(last!)).toBeGreaterThanOrEqual(BigInt(appended.position));
        if (before !== null) expect(BigInt(last!)).toBeGreaterThan(BigInt(before));
      });

      it('refuses a maxCount out of 1..10000 and an empty prefix list', async () => {
        for (const maxCount of [0, -1, 1.5, 10_001]) {
          await expect(store.readAll({ maxCount })).rejects.toThrow(/maxCount/);
        }
        await expect(store.readAll({ maxCount: 1, streamPrefixes: [] })).rejects.toThrow(/streamPrefixes/);
      });
    });

    describe('subscribeToAll', () => {
      it('delivers everything from the start, in global order', async () => {
        const [a, b] = [streamIn('a'), streamIn('b')];
        await store.append(a, newEvents(2), { expectedRevision: 'no_stream' });
        await store.append(b, newEvents(2), { expectedRevision: 'no_stream' });
        await store.append(a, newEvents(1), { expectedRevision: 1 });

        const { events } = record();
        await waitFor(() => ofStreams(events, [a, b]).length === 5, 'the 5 events');

        const ours = ofStreams(events, [a, b]);
        expect(ours.map((event) => [event.streamId, event.revision])).toEqual([
          [a, 0],
          [a, 1],
          [b, 0],
          [b, 1],
          [a, 2],
        ]);
        expectStrictlyIncreasing(events.map((event) => event.position));
        // What a subscription delivers is what was stored.
        const stored = [...(await store.readStream(a)), ...(await store.readStream(b))];
        expect(ours).toEqual(expect.arrayContaining(stored));
      });

      it('resumes strictly after a checkpoint: no duplicates, no gaps', async () => {
        const streamId = streamIn('order');
        await store.append(streamId, newEvents(6), { expectedRevision: 'no_stream' });

        // The first subscriber holds its third event until closed, so it stops after exactly three.
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        const first: RecordedEvent[] = [];
        const { subscription } = record({
          streamPrefixes: [streamId],
          onEvent: async (event) => {
            first.push(event);
            if (first.length === 3) await held;
          },
        });
        await waitFor(() => first.length === 3, 'the first three events');
        const closing = subscription.close();
        release();
        await closing;
        const checkpoint = first[2].position;
        await store.append(streamId, newEvents(4), { expectedRevision: 5 });

        const resumed = record({ fromPosition: checkpoint });
        await waitFor(() => ofStreams(resumed.events, [streamId]).length >= 7, 'the seven other events');

        const delivered = [...first, ...ofStreams(resumed.events, [streamId])];
        expect(delivered.map((event) => event.revision)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        for (const event of resumed.events) expect(BigInt(event.position)).toBeGreaterThan(BigInt(checkpoint));
      });

      it('delivers only the streams matching streamPrefixes', async () => {
        const wanted = [streamIn('a', 1), streamIn('a', 2), streamIn('c', 1)];
        const unwanted = [streamIn('b', 1), `x-${streamIn('a', 3)}`];
        for (const streamId of [...wanted, ...unwanted]) {
          await store.append(streamId, newEvents(2), { expectedRevision: 'no_stream' });
        }

        const { events } = record({ streamPrefixes: [`a${tag}-`, `c${tag}-`] });
        await waitFor(() => events.length === 6, 'the 6 matching events');
        await store.append(unwanted[0], newEvents(1), { expectedRevision: 1 });
        await store.append(wanted[2], newEvents(1), { expectedRevision: 1 });
        await waitFor(() => events.length === 7, 'the live matching event');

        expect(events.map((event) => event.streamId)).toEqual([...wanted.flatMap((s) => [s, s]), wanted[2]]);
      });

      it('keeps delivering events appended after it caught up', async () => {
        const streamId = streamIn('order');
        await store.append(streamId, newEvents(2), { expectedRevision: 'no_stream' });
        const { events } = record({ streamPrefixes: [streamId] });
        await waitFor(() => events.length === 2, 'the existing events');

        await store.append(streamId, newEvents(1), { expectedRevision: 1 });
        await waitFor(() => events.length === 3, 'the first live event');
        await store.append(streamId, newEvents(2), { expectedRevision: 2 });
        await waitFor(() => events.length === 5, 'the next live events');

        expect(events.map((event) => event.revision)).toEqual([0, 1, 2, 3, 4]);
      });

      it('delivers in order under concurrent appends to many streams', async () => {
        const streamIds = Array.from({ length: 20 }, (_, i) => streamIn('busy', i));
        const { events } = record({
          streamPrefixes: [`busy${tag}-`],
          // A handler that yields makes appends and deliveries interleave.
          onEvent: async (event) => {
            await new Promise((resolve) => setImmediate(resolve));
            events.push(event);
          },
        });

        await Promise.all(
          streamIds.map(async (streamId) => {
            for (let revision = 0; revision < 10; revision++) {
              await store.append(streamId, [newEvent('Tested', { revision })], {
                expectedRevision: revision === 0 ? 'no_stream' : revision - 1,
              });
            }
          }),
        );
        await waitFor(() => events.length >= 200, 'the 200 events', 10_000);
        // Nothing more than the 200: delivery follows the store's order, so a marker appended
        // after them is delivered after anything still due for them.
        const marker = streamIn('busy', 'marker');
        await store.append(marker, [newEvent('Marker')], { expectedRevision: 'no_stream' });
        await waitFor(() => events.some((event) => event.streamId === marker), 'the marker');

        expect(events).toHaveLength(201);
        expect(events[200].streamId).toBe(marker);
        expect(new Set(events.map((event) => event.id)).size).toBe(201);
        expectStrictlyIncreasing(events.map((event) => event.position));
        for (const streamId of streamIds) {
          const ofStream = events.filter((event) => event.streamId === streamId);
          expect(ofStream.map((event) => event.revision)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
          expect(ofStream.map((event) => event.data.revision)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        }
      });

      it('stops and calls onError when the handler throws', async () => {
        const streamId = streamIn('order');
        await store.append(streamId, newEvents(3), { expectedRevision: 'no_stream' });
        const failure = new Error('handler failed');
        const delivered: number[] = [];

        const { errors } = record({
          streamPrefixes: [streamId],
          onEvent: async (event) => {
            delivered.push(event.revision);
            if (event.revision === 1) throw failure;
          },
        });
        await waitFor(() => errors.length > 0, 'onError');
        await appendWitnessed(streamId, newEvents(1), 2, 4);

        expect(errors).toEqual([failure]);
        expect(delivered).toEqual([0, 1]);
      });

      it('awaits each handler before delivering the next event', async () => {
        const streamId = streamIn('order');
        await store.append(streamId, newEvents(3), { expectedRevision: 'no_stream' });
        let running = 0;
        let overlapped = false;
        const { events } = record({
          streamPrefixes: [streamId],
          onEvent: async (event) => {
            running += 1;
            overlapped ||= running > 1;
            await new Promise((resolve) => setTimeout(resolve, 10));
            events.push(event);
            running -= 1;
          },
        });

        await waitFor(() => events.length === 3, 'the 3 events');
        expect(overlapped).toBe(false);
      });

      it('stops delivering once closed, after the in-flight handler has finished', async () => {
        const streamId = streamIn('order');
        await store.append(streamId, newEvents(2), { expectedRevision: 'no_stream' });
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        const started: number[] = [];
        const finished: number[] = [];
        const { subscription } = record({
          streamPrefixes: [streamId],
          onEvent: async (event) => {
            started.push(event.revision);
            await released;
            finished.push(event.revision);
          },
        });
        await waitFor(() => started.length === 1, 'the first delivery');
        const idle = record({ streamPrefixes: [streamId] });
        await waitFor(() => idle.events.length === 2, 'an idle subscription to catch up');

        let closed = false;
        const closing = subscription.close().then(() => (closed = true));
        // Closing a subscription with nothing in flight completes: all close() does but wait for
        // the handler is done by then, so only the handler can still hold this one open.
        await idle.subscription.close();
        expect(closed).toBe(false);
        release();
        await closing;

        expect(finished).toEqual([0]);
        await appendWitnessed(streamId, newEvents(1), 1, 3);
        expect(started).toEqual([0]);
        await subscription.close(); // closing twice is harmless
      });
    });
  });
}
