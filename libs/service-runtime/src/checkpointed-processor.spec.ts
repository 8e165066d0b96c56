import { RecordedEvent } from '@campaign-ops/event-store';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { ulid, ulidToUuid } from '@campaign-ops/ids';
import { CheckpointStore, LeaseFence } from '@campaign-ops/read-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { CheckpointedProcessor } from './checkpointed-processor';

/** A checkpoint store (SQLite's, leases and all) that also keeps every saved position, in order. */
class RecordingCheckpoints implements CheckpointStore {
  readonly saved: string[] = [];
  private readonly store = SqliteReadStore.open(':memory:');
  get = (name: string) => this.store.checkpoints.get(name);
  set = async (name: string, position: string, fence?: LeaseFence) => {
    await this.store.checkpoints.set(name, position, fence);
    this.saved.push(position);
  };
  acquireLease: CheckpointStore['acquireLease'] = (...args) => this.store.checkpoints.acquireLease(...args);
  renewLease: CheckpointStore['renewLease'] = (...args) => this.store.checkpoints.renewLease(...args);
  releaseLease: CheckpointStore['releaseLease'] = (...args) => this.store.checkpoints.releaseLease(...args);
  lease: CheckpointStore['lease'] = (name) => this.store.checkpoints.lease(name);
  reset: CheckpointStore['reset'] = (...args) => this.store.checkpoints.reset(...args);
  close = () => this.store.close();
}

const waitFor = async (condition: () => boolean, what: string) => {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('CheckpointedProcessor', () => {
  let events: SqliteEventStore;
  let checkpoints: RecordingCheckpoints;
  let processor: CheckpointedProcessor | undefined;

  beforeEach(async () => {
    events = SqliteEventStore.open(':memory:', { pollIntervalMs: 20 });
    checkpoints = new RecordingCheckpoints();
    for (let i = 0; i < 8; i++)
      await events.append(`thing-${i}`, [{ id: ulidToUuid(ulid()), type: 'Happened', data: { i } }], { expectedRevision: 'no_stream' });
  });

  afterEach(async () => {
    await processor?.stop();
    processor = undefined;
    await events.close();
    await checkpoints.close();
  });

  /** Handlers that wait until released, so the test decides when each event is done. */
  function heldHandlers() {
    const started: number[] = [];
    const release = new Map<number, () => void>();
    const fail = new Map<number, (error: Error) => void>();
    let inFlight = 0;
    let maxInFlight = 0;
    let holding = true;
    const handle = (event: RecordedEvent) =>
      new Promise<void>((resolve, reject) => {
        const i = (event.data as { i: number }).i;
        started.push(i);
        if (!holding) return resolve();
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        release.set(i, () => (inFlight--, resolve()));
        fail.set(i, (error) => (inFlight--, reject(error)));
      });
    /** Lets every handler in hand finish, and every later one at once. */
    const releaseAll = () => {
      holding = false;
      for (const done of release.values()) done();
    };
    return { handle, started, release, fail, releaseAll, maxInFlight: () => maxInFlight };
  }

  const positionOf = async (i: number) => (await events.readStream(`thing-${i}`))[0].position;

  it('hands events over one at a time by default', async () => {
    const held = heldHandlers();
    processor = new CheckpointedProcessor({ name: 'one', eventStore: events, checkpoints, streamPrefixes: ['thing-'], handle: held.handle });
    await processor.start();
    for (let i = 0; i < 8; i++) {
      await waitFor(() => held.started.length === i + 1, `event ${i}`);
      held.release.get(i)!();
    }
    await processor.stop();
    expect(held.started).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(held.maxInFlight()).toBe(1);
    expect(checkpoints.saved[checkpoints.saved.length - 1]).toBe(await positionOf(7));
  });

  it('with concurrency, starts up to that many in order and never checkpoints past an event still in hand', async () => {
    const held = heldHandlers();
    processor = new CheckpointedProcessor({ name: 'four', eventStore: events, checkpoints, streamPrefixes: ['thing-'], handle: held.handle, concurrency: 4 });
    await processor.start();
    await waitFor(() => held.started.length === 4, 'four events in hand');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(held.started).toEqual([0, 1, 2, 3]);

    // 1..3 finish, 0 does not: the window moves on, the checkpoint may not.
    for (const i of [1, 2, 3]) held.release.get(i)!();
    await waitFor(() => held.started.length === 7, 'the window refilled behind the slow event');
    await new Promise((resolve) => setTimeout(resolve, 150)); // past a checkpoint save
    expect(checkpoints.saved).toEqual([]);

    held.release.get(0)!();
    for (const i of [4, 5, 6]) held.release.get(i)!();
    await waitFor(() => held.started.length === 8, 'the last event');
    held.release.get(7)!();
    await processor.stop();
    expect(held.maxInFlight()).toBe(4);
    expect(checkpoints.saved[checkpoints.saved.length - 1]).toBe(await positionOf(7));
  });

  it('with concurrency, starts again from the checkpoint when a handler fails, so the failed event is handled again', async () => {
    const held = heldHandlers();
    processor = new CheckpointedProcessor({ name: 'retry', eventStore: events, checkpoints, streamPrefixes: ['thing-'], handle: held.handle, concurrency: 3 });
    await processor.start();
    await waitFor(() => held.started.length === 3, 'three events in hand');
    held.release.get(0)!();
    held.fail.get(1)!(new Error('the bus is down'));
    held.release.get(2)!();
    // The restart (after its backoff) begins after event 0, the last one handled with all before it.
    await waitFor(() => held.started.filter((i) => i === 1).length === 2, 'event 1 again');
    const position1 = BigInt(await positionOf(1));
    expect(checkpoints.saved.every((position) => BigInt(position) < position1)).toBe(true);

    // Everything from there on is handled, and the checkpoint reaches the end.
    held.releaseAll();
    await waitFor(() => held.started.lastIndexOf(7) > held.started.lastIndexOf(1), 'the last event in the new run');
    await processor.stop();
    expect(checkpoints.saved[checkpoints.saved.length - 1]).toBe(await positionOf(7));
  });
});
