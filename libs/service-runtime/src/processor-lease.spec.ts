import { EventStore, RecordedEvent, SubscriptionPositionRefusedError } from '@campaign-ops/event-store';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { ulid, ulidToUuid } from '@campaign-ops/ids';
import { CheckpointStore } from '@campaign-ops/read-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { CheckpointedProcessor } from './checkpointed-processor';
import { processorProblems } from './processor-status';

/**
 * One active instance per processor across replicas (a lease beside the checkpoint, fenced), and
 * the refusal to run from a checkpoint ahead of the event store's head. Replicas are processors in
 * one process here, over one event store and one read store; each has its own holder name.
 */
const waitFor = async (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** What a paused or dead process never finishes; failed when the test ends, so that the stores can close. */
const hung: Array<(error: Error) => void> = [];
let testOver = false;
const never = () => new Promise<never>((_, reject) => (testOver ? reject(new Error('the test is over')) : hung.push(reject)));

const TTL_MS = 300;
const RENEW_MS = 80;

/** A replica's view of the shared checkpoint store, which can hang its renewals (a paused or dead process). */
function replicaCheckpoints(shared: CheckpointStore) {
  const control = { renewalsHang: false, everythingHangs: false };
  const gate =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>, hangs: () => boolean) =>
    (...args: A): Promise<R> =>
      hangs() ? never() : call(...args);
  const store: CheckpointStore = {
    get: gate(
      (name) => shared.get(name),
      () => control.everythingHangs,
    ),
    set: gate(
      (...args: Parameters<CheckpointStore['set']>) => shared.set(...args),
      () => control.everythingHangs,
    ),
    acquireLease: gate(
      (...args: Parameters<CheckpointStore['acquireLease']>) => shared.acquireLease(...args),
      () => control.everythingHangs,
    ),
    renewLease: gate(
      (...args: Parameters<CheckpointStore['renewLease']>) => shared.renewLease(...args),
      () => control.everythingHangs || control.renewalsHang,
    ),
    releaseLease: gate(
      (...args: Parameters<CheckpointStore['releaseLease']>) => shared.releaseLease(...args),
      () => control.everythingHangs,
    ),
    lease: (name) => shared.lease(name),
    reset: (...args) => shared.reset(...args),
  };
  return { store, control };
}

describe('CheckpointedProcessor across replicas', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let processors: CheckpointedProcessor[];

  beforeEach(async () => {
    events = SqliteEventStore.open(':memory:', { pollIntervalMs: 10 });
    reads = SqliteReadStore.open(':memory:');
    processors = [];
    testOver = false;
  });

  afterEach(async () => {
    testOver = true;
    for (const fail of hung.splice(0)) fail(new Error('the test is over'));
    await Promise.all(processors.map((p) => p.stop()));
    await events.close();
    await reads.close();
  });

  const append = async (count: number) => {
    for (let i = 0; i < count; i++)
      await events.append(`thing-${ulid()}`, [{ id: ulidToUuid(ulid()), type: 'Happened', data: {} }], { expectedRevision: 'no_stream' });
  };
  const head = async () => (await events.lastPosition())!;

  /** The event store as EventStoreDB answers a checkpoint of a recreated database (confirmed, then INVALID_ARGUMENT) while `refuses()`; counts the subscriptions asked for. */
  function refusingStore(refused: string, refuses: () => boolean) {
    const counted = { subscriptions: 0, store: undefined as unknown as EventStore };
    counted.store = Object.assign(Object.create(events) as EventStore, {
      subscribeToAll: (options: Parameters<EventStore['subscribeToAll']>[0]) => {
        counted.subscriptions++;
        if (!refuses() || options.fromPosition !== refused) return events.subscribeToAll(options);
        setTimeout(() => options.onError?.(new SubscriptionPositionRefusedError(refused, new Error('3 INVALID_ARGUMENT: not a valid Position'))), 5);
        return { close: async () => undefined };
      },
    });
    return counted;
  }

  function replica(
    holder: string,
    handle: (event: RecordedEvent) => Promise<void>,
    options: {
      clock?: () => number;
      checkpoints?: CheckpointStore;
      seizeAtStart?: boolean;
      name?: string;
      eventStore?: EventStore;
      refusedRecheckMs?: number;
    } = {},
  ) {
    const processor = new CheckpointedProcessor({
      name: options.name ?? 'things',
      eventStore: options.eventStore ?? events,
      checkpoints: options.checkpoints ?? reads.checkpoints,
      streamPrefixes: ['thing-'],
      handle,
      lease: { holder, ttlMs: TTL_MS, renewMs: RENEW_MS, seizeAtStart: options.seizeAtStart },
      clock: options.clock,
      headRecheckMs: 50,
      refusedRecheckMs: options.refusedRecheckMs ?? 60_000,
    });
    processors.push(processor);
    return processor;
  }

  it('runs in one replica at a time: each event is handled once, by the lease holder', async () => {
    const handled: Record<string, string[]> = { a: [], b: [], c: [] };
    const replicas = ['a', 'b', 'c'].map((holder) => replica(holder, async (event) => void handled[holder].push(event.id)));
    await Promise.all(replicas.map((r) => r.start()));
    await append(30);
    await waitFor(() => Object.values(handled).flat().length === 30, 'every event');
    await sleep(3 * TTL_MS); // several renewals: still one holder
    await append(10);
    await waitFor(() => Object.values(handled).flat().length === 40, 'the later events');
    await sleep(200);
    const counts = Object.values(handled).map((ids) => ids.length);
    expect(counts.sort((x, y) => x - y)).toEqual([0, 0, 40]);
    expect(replicas.map((r) => r.state).sort()).toEqual(['active', 'standby', 'standby']);
    await waitFor(async () => (await reads.checkpoints.get('things')) === (await head()), 'the checkpoint at the head');
  });

  it('is taken over by a standby within the TTL when the holder dies, and nothing is lost', async () => {
    const handledBy = new Map<string, string>();
    const a = replicaCheckpoints(reads.checkpoints);
    let aDead = false;
    const holder = replica('a', async (event) => (aDead ? never() : void handledBy.set(event.id, 'a')), { checkpoints: a.store });
    await holder.start();
    const standby = replica('b', async (event) => void handledBy.set(event.id, 'b'));
    await standby.start();
    await append(10);
    await waitFor(() => handledBy.size === 10, 'the first events, by the holder');
    expect(standby.state).toBe('standby');

    // SIGKILL: the holder handles, renews and writes nothing more.
    a.control.everythingHangs = true;
    aDead = true;
    const died = Date.now();
    await append(10);
    await waitFor(() => standby.state === 'active', 'the standby to take over', TTL_MS + 2 * RENEW_MS + 500);
    expect(Date.now() - died).toBeLessThan(TTL_MS + 2 * RENEW_MS + 500);
    await waitFor(() => handledBy.size === 20, 'every event handled');
    await waitFor(async () => (await reads.checkpoints.get('things')) === (await head()), 'the checkpoint at the head');
  });

  it('fences a holder paused past its lease: it cannot move the checkpoint once another replica took over, and stops', async () => {
    await append(8);
    const ids = (await events.readAll({ maxCount: 100 })).map((event) => event.id);
    // The paused holder's clock stands still (a paused process notices nothing) and its renewals never arrive.
    const frozen = { now: 0 };
    const a = replicaCheckpoints(reads.checkpoints);
    let releaseFifth!: () => void;
    const holder = replica(
      'a',
      (event) => {
        const i = ids.indexOf(event.id);
        if (i === 4) return new Promise<void>((resolve) => (releaseFifth = resolve));
        return i > 4 ? never() : Promise.resolve();
      },
      { checkpoints: a.store, clock: () => frozen.now },
    );
    await holder.start();
    await waitFor(() => releaseFifth !== undefined, 'the holder at the fifth event');
    await sleep(150); // its checkpoint reaches the fourth event
    expect(await reads.checkpoints.get('things')).toBe((await events.readAll({ maxCount: 4 }))[3].position);
    a.control.renewalsHang = true;

    const handledByB: string[] = [];
    const standby = replica('b', async (event) => void handledByB.push(event.id));
    await standby.start();
    await waitFor(() => standby.state === 'active', 'the takeover', 2000);
    await waitFor(() => handledByB.length === 4, 'the events after the checkpoint, by the new holder');
    await waitFor(async () => (await reads.checkpoints.get('things')) === (await head()), 'the checkpoint at the head');

    // The paused holder carries on: its checkpoint write (the fifth event, behind the head) is refused.
    releaseFifth();
    await waitFor(() => holder.state !== 'active', 'the old holder to stop');
    await sleep(300);
    expect(await reads.checkpoints.get('things')).toBe(await head());
    expect(holder.state).toBe('standby');
    expect(standby.state).toBe('active');
  });

  it('hands over at once when the holder stops (a rolling update), without waiting for the TTL', async () => {
    const holder = replica('a', async () => undefined);
    await holder.start();
    const standby = replica('b', async () => undefined);
    await standby.start();
    expect([holder.state, standby.state]).toEqual(['active', 'standby']);
    const stopped = Date.now();
    await holder.stop();
    await waitFor(() => standby.state === 'active', 'the standby to take over');
    expect(Date.now() - stopped).toBeLessThan(TTL_MS);
  });

  it('standalone (seizeAtStart) starts at once, even while a crashed previous run still holds the lease', async () => {
    await reads.checkpoints.acquireLease('things', 'previous-run', 60_000);
    const handled: string[] = [];
    const processor = replica('this-run', async (event) => void handled.push(event.id), { seizeAtStart: true });
    await append(3);
    await processor.start();
    expect(processor.state).toBe('active');
    await waitFor(() => handled.length === 3, 'the events');
  });

  it('refuses to run from a checkpoint ahead of the head, says so, and runs once the checkpoint is reset', async () => {
    await append(5);
    const ahead = (BigInt(await head()) + 1000n).toString();
    await reads.checkpoints.set('things-ahead', ahead);
    const handled: string[] = [];
    const processor = replica('a', async (event) => void handled.push(event.id), { name: 'things-ahead' });
    await processor.start();
    expect(processor.state).toBe('refusing');
    expect(processorProblems()['things-ahead']).toContain(`checkpoint ${ahead} is ahead of the event store's head ${await head()}`);
    await sleep(200);
    expect(handled).toEqual([]);
    expect(await reads.checkpoints.get('things-ahead')).toBe(ahead);

    await reads.checkpoints.reset('things-ahead', undefined);
    await waitFor(() => handled.length === 5, 'every event after the reset');
    expect(processor.state).toBe('active');
    expect(processorProblems()['things-ahead']).toBeUndefined();
  });

  it('refuses to run from a checkpoint the event store refuses to subscribe from, without asking again, until it is reset', async () => {
    await append(5);
    const refused = (await events.readAll({ maxCount: 2 }))[1]!.position;
    const refusing = refusingStore(refused, () => true);
    const store = refusing.store;
    await reads.checkpoints.set('things-refused', refused);
    const handled: string[] = [];
    const processor = replica('a', async (event) => void handled.push(event.id), { name: 'things-refused', eventStore: store });
    await processor.start();

    await waitFor(() => processor.state === 'refusing', 'the refusal');
    expect(processorProblems()['things-refused']).toMatch(
      new RegExp(`the event store refuses checkpoint ${refused}.*reset it: npm run ops -- processors reset things-refused --to-start\\|--to-head`),
    );
    // Rechecked every 50 ms, it stays refusing, without subscribing again (a retry loop would, every few hundred ms, forever).
    await sleep(300);
    expect(processor.state).toBe('refusing');
    expect(refusing.subscriptions).toBe(1);
    expect(handled).toEqual([]);

    await reads.checkpoints.reset('things-refused', undefined);
    await waitFor(() => handled.length === 5, 'every event after the reset');
    expect(processor.state).toBe('active');
    expect(processorProblems()['things-refused']).toBeUndefined();
  });

  it('asks for a refused checkpoint again every refusedRecheckMs, still refusing meanwhile, and runs once the store takes it (the right backup restored)', async () => {
    await append(5);
    const refused = (await events.readAll({ maxCount: 2 }))[1]!.position;
    let refuses = true;
    const refusing = refusingStore(refused, () => refuses);
    await reads.checkpoints.set('things-restored', refused);
    const handled: string[] = [];
    const processor = replica('a', async (event) => void handled.push(event.id), {
      name: 'things-restored',
      eventStore: refusing.store,
      refusedRecheckMs: 400,
    });
    await processor.start();
    await waitFor(() => processor.state === 'refusing', 'the refusal');
    const states = new Set<string>();
    const watch = setInterval(() => states.add(processor.state), 2);
    try {
      await sleep(200);
      expect(refusing.subscriptions).toBe(1);
      // Asked again, and refused again: not ready all along, never running.
      await waitFor(() => refusing.subscriptions >= 2, 'the store asked again', 3000);
      await sleep(100);
      expect([...states]).toEqual(['refusing']);
      expect(processorProblems()['things-restored']).toContain(`the event store refuses checkpoint ${refused}`);
    } finally {
      clearInterval(watch);
    }

    // The right store is back, with an event more: at the next ask it is taken, and the processor runs.
    refuses = false;
    await append(1);
    await waitFor(() => handled.length === 4, 'the events after the checkpoint', 3000);
    expect(processor.state).toBe('active');
    expect(processorProblems()['things-restored']).toBeUndefined();
  });
});
