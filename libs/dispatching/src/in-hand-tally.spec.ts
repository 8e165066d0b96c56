import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { DISPATCH_WORK_COLLECTION, InHandTally } from './in-hand-tally';

describe('the count of work settled in the relay’s hand, across replicas and restarts', () => {
  let reads: SqliteReadStore;
  let clock: number;
  const replica = () => new InHandTally(reads, () => clock);
  const settle = (tally: InHandTally, times: number) => {
    for (let i = 0; i < times; i++) tally.settled();
  };
  /** One replica settled `before` and saved; then the relay moved to another, which settled `after` and saved. */
  const relayMovedAfter = async (before: number, after: number) => {
    const first = replica();
    settle(first, before);
    await first.save();
    const next = replica();
    settle(next, after);
    await next.save();
    return { first, next };
  };

  beforeEach(() => {
    reads = SqliteReadStore.open(':memory:');
    clock = 1_000_000;
  });
  afterEach(async () => {
    await reads.close();
  });

  it('given nothing settled anywhere, every replica reads 0', async () => {
    expect(await replica().count()).toBe(0);
  });

  it('given one replica settling, it reads its own count at once, and the others read it once saved', async () => {
    const relaying = replica();
    const standingBy = replica();
    settle(relaying, 5);
    expect(await relaying.count()).toBe(5);
    expect(await standingBy.count()).toBe(0);
    await relaying.save();
    expect(await standingBy.count()).toBe(5);
  });

  it('given the relay moved to another replica, that one continues the saved count', async () => {
    const first = replica();
    settle(first, 7);
    await first.save();
    const next = replica();
    settle(next, 2);
    expect(await next.count()).toBe(9);
    await next.save();
    expect(await replica().count()).toBe(9);
  });

  it('given a late save from the replica that lost the relay, the count does not go back', async () => {
    const { first } = await relayMovedAfter(3, 10);
    // The first one settles one last event it held, and saves 4 < 13.
    settle(first, 1);
    await first.save();
    expect(await replica().count()).toBe(13);
  });

  it('given a replica that stopped settling (it lost the relay), it reads the saved count after a while', async () => {
    const { first } = await relayMovedAfter(3, 10);
    expect(await first.count()).toBe(3);
    clock += 5_001;
    expect(await first.count()).toBe(13);
  });

  it('given the relay back at a replica that held it before, that one continues the count the other saved', async () => {
    const { first, next } = await relayMovedAfter(3, 10);
    clock += 5_001;
    settle(first, 2);
    expect(await first.count()).toBe(15);
    await first.save();
    expect(await next.count()).toBe(15);
  });

  it('saves on its own while work settles, about every 250 ms', async () => {
    const relaying = new InHandTally(reads);
    settle(relaying, 4);
    const stored = reads.collection<{ id: string; settled: number }>(DISPATCH_WORK_COLLECTION);
    expect(await stored.get('settled-in-hand')).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await stored.get('settled-in-hand')).toMatchObject({ settled: 4 });
  });
});
