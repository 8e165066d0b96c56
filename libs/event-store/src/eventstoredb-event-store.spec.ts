import { PassThrough, Readable } from 'node:stream';
import {
  AccessDeniedError,
  EventStoreDBClient,
  Position,
  ResolvedEvent,
  StreamNotFoundError,
  SubscribeToAllOptions as EsdbSubscribeToAllOptions,
  WrongExpectedVersionError,
} from '@eventstore/db-client';
import { describeWithContainers } from '@campaign-ops/testing/container-testing';
import { ulid, ulidToUuid } from '@campaign-ops/ids';
import { EventStoreLogger } from './event-store-logger';
import { RecordedEvent, WrongExpectedRevisionError } from './event-store.port';
import { encodePosition } from './esdb-position';
import { EventStoreDbEventStore, UndeliverableEventError } from './eventstoredb-event-store';
import { eventStoreContract } from './testing/event-store.contract';
import { startEventStoreDb } from './testing';

describeWithContainers('EventStoreDB adapter', () => {
  let server: Awaited<ReturnType<typeof startEventStoreDb>> | undefined;
  let connectionString = '';

  beforeAll(async () => {
    server = await startEventStoreDb();
    connectionString = server.connectionString;
  }, 240_000);

  afterAll(async () => {
    await server?.stop();
  });

  eventStoreContract('EventStoreDB', async () => EventStoreDbEventStore.connect(connectionString));

  describe('against the server', () => {
    let store: EventStoreDbEventStore;

    beforeEach(() => {
      store = EventStoreDbEventStore.connect(connectionString);
    });

    afterEach(async () => {
      await store.close();
    });

    it('answers ping while open, and not once closed', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
      await store.close();
      await expect(store.ping()).rejects.toThrow(/closed/);
    });

    it('never delivers system events, even without stream prefixes', async () => {
      const seen: RecordedEvent[] = [];
      const subscription = store.subscribeToAll({ onEvent: async (event) => void seen.push(event) });
      // $all is delivered in order: once an event appended now arrives, every system event the
      // server wrote before it (stream creations, settings, stats) has been passed over.
      const marker = `marker-${ulid().toLowerCase()}`;
      await store.append(marker, [{ id: ulidToUuid(ulid()), type: 'Marker', data: {} }], { expectedRevision: 'no_stream' });
      await waitFor(() => seen.some((event) => event.streamId === marker), 'the marker', 20_000);
      await subscription.close();

      expect(seen.filter((event) => event.streamId.startsWith('$') || event.type.startsWith('$'))).toEqual([]);
    });
  });
});

// What follows runs everywhere: the adapter's mapping, against a fake of the client that behaves
// as @eventstore/db-client 6.x documents (errors, streams, positions).

const U64_MAX = (1n << 64n) - 1n;

interface FakeSubscription {
  options: EsdbSubscribeToAllOptions;
  stream: PassThrough & { unsubscribe: jest.Mock };
}

/** Stands in for EventStoreDBClient: each method answers what the test queued. */
class FakeClient {
  appendToStream = jest.fn();
  readStream = jest.fn((_stream: string, _options?: unknown) => readable([]));
  readAll = jest.fn((_options?: unknown) => readable([]));
  dispose = jest.fn(async () => {});
  readonly subscriptions: FakeSubscription[] = [];
  subscribeToAll = jest.fn((options: EsdbSubscribeToAllOptions) => {
    const stream = Object.assign(new PassThrough({ objectMode: true }), {
      unsubscribe: jest.fn(async () => {
        stream.end();
      }),
    });
    this.subscriptions.push({ options, stream });
    return stream;
  });

  asClient(): EventStoreDBClient {
    return this as unknown as EventStoreDBClient;
  }
}

/** A read as the client returns it: a readable of resolved events that may end with an error. */
function readable(items: ResolvedEvent[], error?: Error): Readable & { cancel: () => Promise<void> } {
  const stream = Readable.from(
    (async function* () {
      yield* items;
      if (error) throw error;
    })(),
  );
  return Object.assign(stream, { cancel: async () => {} });
}

function stored(streamId: string, revision: number, position: Position | undefined, overrides: Record<string, unknown> = {}): ResolvedEvent {
  return {
    event: {
      streamId,
      id: `00000000-0000-4000-8000-${String(revision).padStart(12, '0')}`,
      isJson: true,
      revision: BigInt(revision),
      type: 'Tested',
      created: new Date(Date.UTC(2024, 4, 6, 7, 8, 9, 12)),
      data: { revision },
      metadata: undefined,
      position,
      ...overrides,
    },
  } as ResolvedEvent;
}

const at = (n: number): Position => ({ commit: BigInt(n), prepare: BigInt(n) });

async function waitFor(condition: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('EventStoreDbEventStore (against a fake client)', () => {
  let client: FakeClient;
  let store: EventStoreDbEventStore;
  let warnings: string[];
  const logger: EventStoreLogger = { warn: (message) => warnings.push(message), error: (message) => warnings.push(message) };

  beforeEach(() => {
    client = new FakeClient();
    warnings = [];
    store = new EventStoreDbEventStore(client.asClient(), { logger });
  });

  afterEach(async () => {
    await store.close();
  });

  describe('append', () => {
    const events = [
      { id: '0190f6a4-0000-4000-8000-000000000001', type: 'Placed', data: { total: 3 }, metadata: { actor: 'me' } },
      { id: '0190f6a4-0000-4000-8000-000000000002', type: 'Paid', data: { by: 'card' } },
    ];

    function appendSucceeds(nextExpectedRevision: bigint, position?: Position) {
      client.appendToStream.mockResolvedValue({ success: true, nextExpectedRevision, position });
    }

    it.each([
      ['no_stream' as const, 'no_stream'],
      ['any' as const, 'any'],
      ['stream_exists' as const, 'stream_exists'],
      [4, 4n],
    ])('writes JSON events with their ids, expecting %p as %p', async (expectedRevision, esdbExpected) => {
      appendSucceeds(5n, at(100));
      client.readStream.mockReturnValue(readable([stored('order-1', 5, at(100), { id: events[1]!.id })]));

      await store.append('order-1', events, { expectedRevision });

      expect(client.appendToStream).toHaveBeenCalledWith(
        'order-1',
        [
          { id: events[0]!.id, contentType: 'application/json', type: 'Placed', data: { total: 3 }, metadata: { actor: 'me' } },
          { id: events[1]!.id, contentType: 'application/json', type: 'Paid', data: { by: 'card' }, metadata: undefined },
        ],
        { expectedRevision: esdbExpected, requiresLeader: true },
      );
    });

    it('reports the revision the server gives and the position of the event read back there', async () => {
      appendSucceeds(7n, at(900)); // the position of the write, not necessarily the last event's
      client.readStream.mockReturnValue(readable([stored('order-1', 7, { commit: 880n, prepare: 870n }, { id: events[1]!.id })]));

      const result = await store.append('order-1', events, { expectedRevision: 5 });

      expect(result).toEqual({ nextRevision: 7, position: encodePosition({ commit: 880n, prepare: 870n }) });
      expect(client.readStream).toHaveBeenCalledWith('order-1', { fromRevision: 7n, maxCount: 1, requiresLeader: true });
    });

    it('answers a retry the server took as already done (no position) with the original result', async () => {
      appendSucceeds(1n, undefined);
      client.readStream.mockReturnValue(readable([stored('order-1', 1, at(300), { id: events[1]!.id.toUpperCase() })]));

      await expect(store.append('order-1', events, { expectedRevision: 'no_stream' })).resolves.toEqual({
        nextRevision: 1,
        position: encodePosition(at(300)),
      });
    });

    it('falls back to the reported position, with a warning, when the event is not where the server said', async () => {
      appendSucceeds(1n, at(300));
      client.readStream.mockReturnValue(readable([], new StreamNotFoundError(undefined, 'order-1')));

      await expect(store.append('order-1', events, { expectedRevision: 'no_stream' })).resolves.toEqual({
        nextRevision: 1,
        position: encodePosition(at(300)),
      });
      expect(warnings).toEqual([expect.stringMatching(/not at revision 1/)]);
    });

    it('fails when it can learn no position at all', async () => {
      appendSucceeds(1n, undefined);
      await expect(store.append('order-1', events, { expectedRevision: 'no_stream' })).rejects.toThrow(/could not be read back/);
    });

    it.each([
      [1n, 1],
      ['no_stream' as const, 'no_stream'],
      [-1n, 'no_stream'],
    ])('turns WrongExpectedVersion with current %p into WrongExpectedRevisionError with actual %p', async (current, actual) => {
      client.appendToStream.mockRejectedValue(
        new WrongExpectedVersionError(undefined, { streamName: 'order-1', expected: 'no_stream', current: current as bigint }),
      );

      const appending = store.append('order-1', events, { expectedRevision: 'no_stream' });

      await expect(appending).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(appending).rejects.toMatchObject({ streamId: 'order-1', expected: 'no_stream', actual });
    });

    it('passes other errors through', async () => {
      const denied = new AccessDeniedError();
      client.appendToStream.mockRejectedValue(denied);
      await expect(store.append('order-1', events, { expectedRevision: 'any' })).rejects.toBe(denied);
    });

    it('rejects an empty append, a repeated id and a bad expected revision without calling the server', async () => {
      await expect(store.append('order-1', [], { expectedRevision: 'any' })).rejects.toThrow(/at least one/);
      await expect(store.append('order-1', [events[0]!, events[0]!], { expectedRevision: 'any' })).rejects.toThrow(/twice/);
      await expect(store.append('order-1', events, { expectedRevision: -1 })).rejects.toThrow(/non-negative/);
      await expect(store.append('order-1', events, { expectedRevision: 1.5 })).rejects.toThrow(/non-negative/);
      expect(client.appendToStream).not.toHaveBeenCalled();
    });
  });

  describe('readStream', () => {
    it('maps what it reads', async () => {
      client.readStream.mockReturnValue(
        readable([stored('order-1', 0, { commit: 10n, prepare: 9n }, { metadata: { actor: 'me' } }), stored('order-1', 1, at(20))]),
      );

      const events = await store.readStream('order-1');

      expect(events).toEqual([
        {
          id: '00000000-0000-4000-8000-000000000000',
          streamId: 'order-1',
          type: 'Tested',
          revision: 0,
          position: encodePosition({ commit: 10n, prepare: 9n }),
          data: { revision: 0 },
          metadata: { actor: 'me' },
          occurredAt: '2024-05-06T07:08:09.012Z',
        },
        expect.objectContaining({ revision: 1, position: encodePosition(at(20)), metadata: {} }),
      ]);
    });

    it.each([
      [undefined, { direction: 'forwards', fromRevision: 'start' }],
      [{ direction: 'forwards' as const }, { direction: 'forwards', fromRevision: 'start' }],
      [{ direction: 'backwards' as const }, { direction: 'backwards', fromRevision: 'end' }],
      [
        { fromRevision: 3, maxCount: 2 },
        { direction: 'forwards', fromRevision: 3n, maxCount: 2 },
      ],
      [
        { direction: 'backwards' as const, fromRevision: 0 },
        { direction: 'backwards', fromRevision: 0n },
      ],
    ])('reads with %p as %p', async (options, esdbOptions) => {
      await store.readStream('order-1', options);
      expect(client.readStream).toHaveBeenCalledWith('order-1', { ...esdbOptions, requiresLeader: true });
    });

    it('reads nothing for maxCount 0', async () => {
      expect(await store.readStream('order-1', { maxCount: 0 })).toEqual([]);
      expect(client.readStream).not.toHaveBeenCalled();
    });

    it('reads an absent stream as empty', async () => {
      client.readStream.mockReturnValue(readable([], new StreamNotFoundError(undefined, 'order-1')));
      expect(await store.readStream('order-1')).toEqual([]);
    });

    it('passes other errors through', async () => {
      const denied = new AccessDeniedError();
      client.readStream.mockReturnValue(readable([], denied));
      await expect(store.readStream('order-1')).rejects.toBe(denied);
    });

    it.each([
      ['binary data', { isJson: false, data: new Uint8Array([1]) }],
      ['JSON data that is not an object', { data: [1, 2] }],
      ['metadata that is not a JSON object', { metadata: new Uint8Array([1]) }],
    ])('refuses an event with %s', async (_, overrides) => {
      client.readStream.mockReturnValue(readable([stored('order-1', 0, at(1), overrides)]));
      await expect(store.readStream('order-1')).rejects.toBeInstanceOf(UndeliverableEventError);
    });

    it('refuses events without a position (servers before 22.6)', async () => {
      client.readStream.mockReturnValue(readable([stored('order-1', 0, { commit: U64_MAX, prepare: U64_MAX })]));
      await expect(store.readStream('order-1')).rejects.toThrow(/did not report its position/);
    });
  });

  describe('subscribeToAll', () => {
    function record(options: { fromPosition?: string; streamPrefixes?: string[] } = {}) {
      const events: RecordedEvent[] = [];
      const errors: Error[] = [];
      const subscription = store.subscribeToAll({
        ...options,
        onEvent: async (event) => void events.push(event),
        onError: (error) => errors.push(error),
      });
      return { events, errors, subscription };
    }

    it('subscribes with a stream name filter from the decoded position', async () => {
      record({ fromPosition: encodePosition({ commit: 42n, prepare: 41n }), streamPrefixes: ['order-', 'invoice-'] });
      await waitFor(() => client.subscriptions.length === 1, 'the subscription');

      const { options } = client.subscriptions[0]!;
      expect(options.fromPosition).toEqual({ commit: 42n, prepare: 41n });
      expect(options.filter).toMatchObject({ filterOn: 'streamName', prefixes: ['order-', 'invoice-'] });
    });

    it('subscribes from the start, leaving system events out on the server, without prefixes', async () => {
      record();
      await waitFor(() => client.subscriptions.length === 1, 'the subscription');

      const { options } = client.subscriptions[0]!;
      expect(options.fromPosition).toBe('start');
      expect(options.filter).toMatchObject({ filterOn: 'eventType', regex: '^[^$].*' });
    });

    it('delivers matching events only, never system events', async () => {
      const { events } = record({ streamPrefixes: ['order-'] });
      await waitFor(() => client.subscriptions.length === 1, 'the subscription');
      const { stream } = client.subscriptions[0]!;

      stream.write(stored('order-1', 0, at(1)));
      stream.write(stored('$stats-node', 0, at(2), { type: '$statsCollected' }));
      stream.write(stored('order-1', 1, at(3), { type: '$metadata' }));
      stream.write(stored('invoice-1', 0, at(4)));
      stream.write(stored('order-2', 0, at(5)));
      stream.write(stored('order-3', 0, at(6)));
      // The stream is read in order: the last one arriving means the others were dealt with.
      await waitFor(() => events.some((event) => event.streamId === 'order-3'), 'the last event');

      expect(events.map((event) => [event.streamId, event.position])).toEqual([
        ['order-1', encodePosition(at(1))],
        ['order-2', encodePosition(at(5))],
        ['order-3', encodePosition(at(6))],
      ]);
    });

    it('resubscribes after a drop from the last position seen, without onError', async () => {
      const { events, errors } = record({ streamPrefixes: ['order-'] });
      await waitFor(() => client.subscriptions.length === 1, 'the subscription');
      client.subscriptions[0]!.stream.write(stored('order-1', 0, at(7)));
      client.subscriptions[0]!.stream.write(stored('order-x', 0, at(8), { type: '$>' }));
      await waitFor(() => events.length === 1, 'the event');
      client.subscriptions[0]!.stream.destroy(new Error('14 UNAVAILABLE: Connection dropped'));

      await waitFor(() => client.subscriptions.length === 2, 'the resubscription');
      expect(client.subscriptions[1]!.options.fromPosition).toEqual(at(8));
      expect(errors).toEqual([]);
      expect(warnings).toEqual([expect.stringMatching(/Connection dropped; resubscribing/)]);
    });

    it('stops with onError on an event it cannot deliver', async () => {
      const { errors } = record();
      await waitFor(() => client.subscriptions.length === 1, 'the subscription');
      client.subscriptions[0]!.stream.write(stored('order-1', 0, at(1), { isJson: false, data: new Uint8Array() }));

      await waitFor(() => errors.length === 1, 'onError');
      expect(errors[0]).toBeInstanceOf(UndeliverableEventError);
      expect(client.subscriptions).toHaveLength(1);
    });

    it('rejects a malformed fromPosition and an empty streamPrefixes', () => {
      const onEvent = async () => {};
      expect(() => store.subscribeToAll({ fromPosition: 'abc', onEvent })).toThrow(/position/);
      expect(() => store.subscribeToAll({ fromPosition: '-1', onEvent })).toThrow(/position/);
      expect(() => store.subscribeToAll({ streamPrefixes: [], onEvent })).toThrow(/streamPrefixes/);
    });

    describe('when silent', () => {
      beforeEach(async () => {
        await store.close();
        store = new EventStoreDbEventStore(client.asClient(), { logger, stallTimeoutMs: 40 });
      });

      it('restarts if $all holds a newer event for it', async () => {
        client.readAll.mockImplementation(() => readable([stored('invoice-1', 0, at(30)), stored('order-1', 3, at(20)), stored('order-1', 2, at(10))]));
        const { events, errors } = record({ streamPrefixes: ['order-'] });
        await waitFor(() => client.subscriptions.length === 1, 'the subscription');
        client.subscriptions[0]!.stream.write(stored('order-1', 2, at(10)));

        await waitFor(() => client.subscriptions.length === 2, 'the restart');
        expect(client.readAll).toHaveBeenCalledWith(expect.objectContaining({ direction: 'backwards', fromPosition: 'end' }));
        expect(client.subscriptions[1]!.options.fromPosition).toEqual(at(10));
        expect(events).toHaveLength(1);
        expect(errors).toEqual([]);
      });

      it('stays if $all holds nothing newer for it', async () => {
        client.readAll.mockImplementation(() =>
          readable([stored('$stats-node', 9, at(40), { type: '$statsCollected' }), stored('invoice-1', 0, at(30)), stored('order-1', 2, at(10))]),
        );
        record({ streamPrefixes: ['order-'] });
        await waitFor(() => client.subscriptions.length === 1, 'the subscription');
        client.subscriptions[0]!.stream.write(stored('order-1', 2, at(10)));

        await waitFor(() => client.readAll.mock.calls.length >= 2, 'two stall checks');
        expect(client.subscriptions).toHaveLength(1);
      });

      it('counts what a checkpoint covered as seen', async () => {
        client.readAll.mockImplementation(() => readable([stored('order-1', 2, at(10))]));
        record({ streamPrefixes: ['order-'] });
        await waitFor(() => client.subscriptions.length === 1, 'the subscription');
        const { options, stream } = client.subscriptions[0]!;
        await options.filter!.checkpointReached!(stream as never, at(15));

        await waitFor(() => client.readAll.mock.calls.length >= 2, 'two stall checks');
        expect(client.subscriptions).toHaveLength(1);
      });
    });
  });

  describe('readAll', () => {
    it('starts after fromPosition (the server starts at it), leaves out system events and other streams, and stops at maxCount', async () => {
      client.readAll.mockImplementation(() =>
        readable([
          stored('order-1', 0, at(10)),
          stored('$stats-1', 0, at(11)),
          stored('order-1', 1, at(12), { type: '$metadata' }),
          stored('invoice-1', 0, at(13)),
          stored('order-2', 0, at(14)),
          stored('order-1', 2, at(15)),
          stored('order-1', 3, at(16)),
        ]),
      );

      const page = await store.readAll({ fromPosition: encodePosition(at(10)), maxCount: 2, streamPrefixes: ['order-'] });

      expect(page.map((event) => [event.streamId, event.revision, event.position])).toEqual([
        ['order-2', 0, encodePosition(at(14))],
        ['order-1', 2, encodePosition(at(15))],
      ]);
      expect(client.readAll).toHaveBeenCalledWith(expect.objectContaining({ direction: 'forwards', fromPosition: at(10) }));
    });

    it('reads from the start without fromPosition, and answers the last position from the end of $all', async () => {
      client.readAll.mockImplementationOnce(() => readable([stored('order-1', 0, at(10))]));
      expect((await store.readAll({ maxCount: 5 })).map((event) => event.position)).toEqual([encodePosition(at(10))]);
      expect(client.readAll).toHaveBeenLastCalledWith(expect.objectContaining({ fromPosition: 'start' }));

      client.readAll.mockImplementationOnce(() => readable([stored('order-9', 4, at(99))]));
      expect(await store.lastPosition()).toBe(encodePosition(at(99)));
      expect(client.readAll).toHaveBeenLastCalledWith(expect.objectContaining({ direction: 'backwards', fromPosition: 'end', maxCount: 1 }));
      client.readAll.mockImplementationOnce(() => readable([]));
      expect(await store.lastPosition()).toBeNull();
    });
  });

  describe('ping and close', () => {
    it('pings by reading a stream: an absent stream is an answer', async () => {
      client.readStream.mockReturnValue(readable([], new StreamNotFoundError(undefined, 'x')));
      await expect(store.ping()).resolves.toBeUndefined();
      expect(client.readStream).toHaveBeenCalledWith(expect.any(String), expect.objectContaining({ maxCount: 1 }));
    });

    it('fails ping when the server does not answer', async () => {
      client.readStream.mockReturnValue(readable([], new Error('14 UNAVAILABLE: No connection established')));
      await expect(store.ping()).rejects.toThrow(/UNAVAILABLE/);
    });

    it('closes its subscriptions, then the client, and refuses work afterwards', async () => {
      const seen: RecordedEvent[] = [];
      store.subscribeToAll({ onEvent: async (event) => void seen.push(event) });
      await waitFor(() => client.subscriptions.length === 1, 'the subscription');

      await store.close();

      expect(client.subscriptions[0]!.stream.unsubscribe).toHaveBeenCalled();
      expect(client.dispose).toHaveBeenCalledTimes(1);
      await expect(store.ping()).rejects.toThrow(/closed/);
      expect(() => store.subscribeToAll({ onEvent: async () => {} })).toThrow(/closed/);
      await store.close(); // closing twice is harmless
      expect(client.dispose).toHaveBeenCalledTimes(1);
    });
  });
});
