import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { documentsAfter, LiveProjection, Projection } from './projection';
import { projectionProcessor } from './projection-processor';

/** A counter per stream: its total in `counters`, and one `marks` document per event named by its data. */
type Counter = { total: number; marks: string[] };
const counters: Projection<Counter> = {
  name: 'counters',
  streamPrefix: 'counter-',
  collections: [{ name: 'counters', indexes: ['total'] }, { name: 'marks' }],
  processor: { name: 'counter-views', reacts: false },
  documentId: (streamId) => streamId.slice('counter-'.length),
  initialState: () => ({ total: 0, marks: [] }),
  evolve: (state, event) => ({ total: state.total + (event.data.by as number), marks: [...state.marks, event.data.mark as string] }),
  documents: (state, revision) => [
    { collection: 'counters', doc: { id: 'c1', total: state.total, revision } },
    ...state.marks.map((mark) => ({ collection: 'marks', doc: { id: mark, counter: 'c1' } })),
  ],
  resume: (doc) => (typeof doc.revision === 'number' ? { state: { total: doc.total as number, marks: [] }, revision: doc.revision } : null),
};

const added = (by: number, mark: string) => ({ id: crypto.randomUUID(), type: 'Added', data: { by, mark }, metadata: { version: 1 } });

describe('a projection kept live', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let live: LiveProjection<Counter>;

  beforeEach(() => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    live = new LiveProjection(counters, events, reads);
  });
  afterEach(async () => {
    await reads.close();
    await events.close();
  });

  it('opens its collections as the projection declares them: indexes, and read-mostly ones as such', () => {
    const opened = jest.spyOn(reads, 'collection');
    new LiveProjection({ ...counters, collections: [{ name: 'counters', indexes: ['total'], readMostly: true }, { name: 'marks' }] }, events, reads);
    expect(opened.mock.calls).toEqual([
      ['counters', { indexes: ['total'], readMostly: true }],
      ['marks', { indexes: undefined, readMostly: undefined }],
    ]);
  });

  it('given a stream, brings its documents up to it, each at the stream revision', async () => {
    await events.append('counter-c1', [added(2, 'a'), added(3, 'b')], { expectedRevision: 'no_stream' });
    await expect(live.refresh('counter-c1')).resolves.toEqual({ state: { total: 5, marks: ['a', 'b'] }, revision: 1 });
    await expect(live.collection('counters').get('c1')).resolves.toEqual({ id: 'c1', total: 5, revision: 1 });
    await expect(live.collection('marks').revisionOf('b')).resolves.toBe(1);
  });

  it('goes on from the stored document where the projection can resume: only the events after it are read', async () => {
    await events.append('counter-c1', [added(2, 'a'), added(3, 'b')], { expectedRevision: 'no_stream' });
    await live.refresh('counter-c1');
    await events.append('counter-c1', [added(10, 'c')], { expectedRevision: 1 });
    const read = jest.spyOn(events, 'readStream');
    await expect(live.refresh('counter-c1')).resolves.toEqual({ state: { total: 15, marks: ['c'] }, revision: 2 });
    expect(read).toHaveBeenCalledWith('counter-c1', { fromRevision: 2 });
  });

  it('skips a stream whose document already holds the event (written inline by its command), and not one behind it', async () => {
    await events.append('counter-c1', [added(2, 'a')], { expectedRevision: 'no_stream' });
    await live.refresh('counter-c1');
    await events.append('counter-c1', [added(3, 'b')], { expectedRevision: 0 });
    const read = jest.spyOn(events, 'readStream');
    await expect(live.refresh('counter-c1', 0)).resolves.toBeNull();
    expect(read).not.toHaveBeenCalled();
    await expect(live.refresh('counter-c1', 1)).resolves.toMatchObject({ revision: 1 });
  });

  it("writes the stream's own document last, so a write cut short between them is not skipped later", async () => {
    await events.append('counter-c1', [added(2, 'a')], { expectedRevision: 'no_stream' });
    const first = live.collection('counters');
    jest.spyOn(first, 'upsert').mockRejectedValueOnce(new Error('the process stopped here'));
    await expect(live.refresh('counter-c1')).rejects.toThrow('the process stopped here');
    await expect(live.collection('marks').get('a')).resolves.not.toBeNull();
    await expect(live.refresh('counter-c1', 0)).resolves.toMatchObject({ revision: 0 });
    await expect(first.get('c1')).resolves.toMatchObject({ total: 2 });
  });

  it("answers the stream's current state (from its document, then the events after it) without writing anything", async () => {
    await expect(live.current('counter-c1')).resolves.toEqual({ state: { total: 0, marks: [] }, revision: null, read: 0 });
    await events.append('counter-c1', [added(2, 'a'), added(3, 'b')], { expectedRevision: 'no_stream' });
    await live.refresh('counter-c1');
    await events.append('counter-c1', [added(10, 'c')], { expectedRevision: 1 });
    const read = jest.spyOn(events, 'readStream');
    await expect(live.current('counter-c1')).resolves.toEqual({ state: { total: 15, marks: ['c'] }, revision: 2, read: 1 });
    expect(read).toHaveBeenCalledWith('counter-c1', { fromRevision: 2 });
    await expect(live.collection('counters').get('c1')).resolves.toEqual({ id: 'c1', total: 5, revision: 1 });
  });

  it('answers null for a stream with no event, writing nothing', async () => {
    await expect(live.refresh('counter-none')).resolves.toBeNull();
    await expect(live.collection('counters').count({})).resolves.toBe(0);
  });

  it('opens only the collections the projection keeps', () => {
    expect(() => live.collection('other')).toThrow('the counters projection keeps no other collection');
  });

  it('gets a processor named as the projection says, with a reaction exactly when it says it reacts', () => {
    expect(projectionProcessor(live, { eventStore: events, checkpoints: reads.checkpoints })).toBeDefined();
    expect(() => projectionProcessor(live, { eventStore: events, checkpoints: reads.checkpoints, react: async () => undefined })).toThrow(
      'the counter-views processor only projects',
    );
    const reacting = new LiveProjection({ ...counters, processor: { name: 'counter-work', reacts: true } }, events, reads);
    expect(() => projectionProcessor(reacting, { eventStore: events, checkpoints: reads.checkpoints })).toThrow('the counter-work processor reacts to events');
  });

  it('keeps the model live from the event store, event by event, checkpointed under its name', async () => {
    const processor = projectionProcessor(live, { eventStore: events, checkpoints: reads.checkpoints });
    await processor.start();
    try {
      await events.append('counter-c1', [added(2, 'a'), added(3, 'b')], { expectedRevision: 'no_stream' });
      for (let waited = 0; (await live.collection('counters').revisionOf('c1')) !== 1 && waited < 5_000; waited += 20)
        await new Promise((r) => setTimeout(r, 20));
      await expect(live.collection('counters').get('c1')).resolves.toMatchObject({ total: 5 });
    } finally {
      await processor.stop();
    }
    await expect(reads.checkpoints.get('counter-views')).resolves.toBeDefined();
  });

  it('given commands that write their document inline after appending, then the processor reads no stream and writes nothing again', async () => {
    const processor = projectionProcessor(live, { eventStore: events, checkpoints: reads.checkpoints });
    const counterDocs = live.collection('counters');
    await processor.start();
    const readStream = jest.spyOn(events, 'readStream');
    const upserts = jest.spyOn(counterDocs, 'upsert');
    try {
      let total = 0;
      for (let revision = 0; revision < 5; revision++) {
        // As ChargedDispatches.make and CreditLedgers do: the append, then its document from the state decided.
        await events.append('counter-c1', [added(1, `m${revision}`)], { expectedRevision: revision === 0 ? 'no_stream' : revision - 1 });
        total++;
        await counterDocs.upsert({ id: 'c1', total, revision }, revision);
      }
      for (let waited = 0; (await reads.checkpoints.get('counter-views')) === null && waited < 5_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      await processor.stop();
    }
    expect(readStream).not.toHaveBeenCalled();
    expect(upserts).toHaveBeenCalledTimes(5);
    await expect(counterDocs.get('c1')).resolves.toEqual({ id: 'c1', total: 5, revision: 4 });
  });
});

describe('documentsAfter (given events, then documents)', () => {
  it('folds the events from the initial state and gives the documents at the last revision', () => {
    const given = [
      { type: 'Added', version: 1, data: { by: 2, mark: 'a' } },
      { type: 'Added', version: 1, data: { by: 3, mark: 'b' } },
    ];
    expect(documentsAfter(counters, 'counter-c1', given)).toEqual([
      { collection: 'counters', doc: { id: 'c1', total: 5, revision: 1 } },
      { collection: 'marks', doc: { id: 'a', counter: 'c1' } },
      { collection: 'marks', doc: { id: 'b', counter: 'c1' } },
    ]);
  });
});
