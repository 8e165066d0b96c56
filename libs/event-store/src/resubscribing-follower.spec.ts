import { RecordedEvent } from './event-store.port';
import { FollowedItem, FollowedSource, ResubscribingFollower, ResubscribingFollowerOptions, SourceSignals } from './resubscribing-follower';

type Entry = { item: FollowedItem } | { error: unknown } | { end: true };

/** A subscription under the test's control: items, drops, ends, silence. */
class FakeSource implements FollowedSource {
  closed = false;
  /** How many times the follower asked for the next item. */
  pulls = 0;
  private readonly queue: Entry[] = [];
  private waiting: { resolve: (result: IteratorResult<FollowedItem>) => void; reject: (error: unknown) => void } | undefined;

  constructor(private readonly behaviour: { hangOnClose?: boolean } = {}) {}

  push(...items: FollowedItem[]): this {
    for (const item of items) this.enqueue({ item });
    return this;
  }

  drop(error: unknown): void {
    this.enqueue({ error });
  }

  end(): void {
    this.enqueue({ end: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<FollowedItem> {
    return { next: () => this.next() };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.behaviour.hangOnClose) return new Promise(() => {});
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.resolve({ done: true, value: undefined });
  }

  private next(): Promise<IteratorResult<FollowedItem>> {
    this.pulls += 1;
    const entry = this.queue.shift();
    if (entry) return settle(entry);
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  private enqueue(entry: Entry): void {
    const waiting = this.waiting;
    if (!waiting) {
      this.queue.push(entry);
      return;
    }
    this.waiting = undefined;
    settle(entry).then(waiting.resolve, waiting.reject);
  }
}

function settle(entry: Entry): Promise<IteratorResult<FollowedItem>> {
  if ('item' in entry) return Promise.resolve({ done: false, value: entry.item });
  if ('error' in entry) return Promise.reject(entry.error);
  return Promise.resolve({ done: true, value: undefined });
}

function event(position: number, streamId = 'order-1'): FollowedItem {
  const recorded: RecordedEvent = {
    id: `00000000-0000-0000-0000-${String(position).padStart(12, '0')}`,
    streamId,
    type: 'Tested',
    revision: position,
    position: String(position),
    data: { position },
    metadata: {},
    occurredAt: '2024-01-01T00:00:00.000Z',
  };
  return { kind: 'event', event: recorded };
}

const skipped = (position: number): FollowedItem => ({ kind: 'skipped', position: String(position) });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(2);
  }
}

describe('ResubscribingFollower', () => {
  let followers: ResubscribingFollower[];

  beforeEach(() => {
    followers = [];
  });

  afterEach(async () => {
    await Promise.all(followers.map((follower) => follower.close()));
  });

  /** A follower over fake sources, recording what it does. Its watchdog is slow unless the test says otherwise. */
  function follow(overrides: Partial<ResubscribingFollowerOptions> = {}) {
    const opened: { from: string | undefined; source: FakeSource; signals: SourceSignals }[] = [];
    const delivered: string[] = [];
    const errors: Error[] = [];
    const warnings: string[] = [];
    const stallChecks: (string | undefined)[] = [];
    let finished = 0;
    const follower = new ResubscribingFollower({
      open: (from, signals) => {
        const source = new FakeSource();
        opened.push({ from, source, signals });
        return source;
      },
      isStalled: async (lastSeen) => {
        stallChecks.push(lastSeen);
        return false;
      },
      onEvent: async (recorded) => {
        delivered.push(recorded.position);
      },
      onError: (error) => errors.push(error),
      stallTimeoutMs: 60_000,
      backoff: { initialMs: 5, maxMs: 40 },
      random: () => 0.5, // no jitter
      logger: { warn: (message) => warnings.push(message), error: (message) => warnings.push(message) },
      onFinished: () => (finished += 1),
      ...overrides,
    });
    followers.push(follower);
    const source = (i: number) => opened[i]!.source;
    const delays = () => warnings.flatMap((message) => /in (\d+) ms/.exec(message)?.[1] ?? []).map(Number);
    return { follower, opened, source, delivered, errors, warnings, stallChecks, delays, finished: () => finished };
  }

  describe('delivery', () => {
    it('does not open a subscription before the caller has the follower', async () => {
      const { opened } = follow();
      expect(opened).toHaveLength(0);
      await waitFor(() => opened.length === 1, 'the subscription');
    });

    it('delivers events in order, strictly after the start position, one handler at a time', async () => {
      let running = 0;
      let overlapped = false;
      const delivered: string[] = [];
      const { opened, source } = follow({
        fromPosition: '10',
        onEvent: async (recorded) => {
          running += 1;
          overlapped ||= running > 1;
          await sleep(5);
          delivered.push(recorded.position);
          running -= 1;
        },
      });
      await waitFor(() => opened.length === 1, 'the subscription');
      expect(opened[0]!.from).toBe('10');

      source(0).push(event(9), event(10), event(11), skipped(12), event(13), event(20));
      await waitFor(() => delivered.length === 3, 'the 3 events');

      expect(delivered).toEqual(['11', '13', '20']);
      expect(overlapped).toBe(false);
    });

    it('pulls the next item only once the handler is done with the previous one', async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let holding = false;
      const { opened, source } = follow({
        onEvent: async (recorded) => {
          if (recorded.position !== '1') return;
          holding = true;
          await held;
        },
      });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).push(event(1), event(2), event(3));
      // The handler holds the first item: a follower reading ahead would have pulled again by now.
      await waitFor(() => holding, 'the handler to hold the first item');

      expect(source(0).pulls).toBe(1);
      release();
      await waitFor(() => source(0).pulls === 4, 'the next pulls');
    });
  });

  describe('resubscription', () => {
    it('resubscribes after a drop, after the last delivered position, without calling onError', async () => {
      const { opened, source, delivered, errors, warnings } = follow();
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).push(event(1), event(2));
      source(0).drop(new Error('connection reset'));

      await waitFor(() => opened.length === 2, 'the resubscription');
      expect(opened[1]!.from).toBe('2');
      expect(source(0).closed).toBe(true);
      // A server that starts at the position itself, or replays, does not cause duplicates.
      source(1).push(event(2), event(3));
      await waitFor(() => delivered.length === 3, 'the next event');

      expect(delivered).toEqual(['1', '2', '3']);
      expect(errors).toEqual([]);
      expect(warnings).toEqual([expect.stringMatching(/dropped: connection reset; resubscribing after position 2 in 5 ms/)]);
    });

    it('resubscribes when the subscription simply ends, from the start if nothing came', async () => {
      const { opened, source, errors } = follow();
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).end();

      await waitFor(() => opened.length === 2, 'the resubscription');
      expect(opened[1]!.from).toBeUndefined();
      expect(errors).toEqual([]);
    });

    it('resumes after events it skipped, not only after delivered ones', async () => {
      const { opened, source, delivered } = follow({ fromPosition: '3' });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).push(event(4), skipped(5), skipped(6));
      source(0).drop(new Error('gone'));

      await waitFor(() => opened.length === 2, 'the resubscription');
      expect(opened[1]!.from).toBe('6');
      expect(delivered).toEqual(['4']);
    });

    it('backs off exponentially while resubscribing fails, up to the maximum, and starts over once it works', async () => {
      let attempts = 0;
      const sources: FakeSource[] = [];
      const { delays, delivered, errors } = follow({
        open: () => {
          attempts += 1;
          if (attempts <= 5) throw new Error('unavailable');
          const source = new FakeSource();
          sources.push(source);
          return source;
        },
      });

      await waitFor(() => sources.length === 1, 'a working subscription');
      expect(delays()).toEqual([5, 10, 20, 40, 40]);

      sources[0]!.push(event(1));
      await waitFor(() => delivered.length === 1, 'the event');
      sources[0]!.drop(new Error('leader changed'));
      await waitFor(() => sources.length === 2, 'the resubscription');

      expect(delays()).toEqual([5, 10, 20, 40, 40, 5]);
      expect(errors).toEqual([]);
    });

    it('keeps backing off while subscriptions are confirmed and then dropped without delivering anything', async () => {
      const { opened, source, delays } = follow();
      await waitFor(() => opened.length === 1, 'the subscription');
      opened[0]!.signals.alive(); // confirmed by the server
      source(0).drop(new Error('first'));
      await waitFor(() => opened.length === 2, 'the second subscription');
      opened[1]!.signals.alive('7'); // a checkpoint: proof of life, but the cursor stays where it was
      source(1).drop(new Error('second'));
      await waitFor(() => opened.length === 3, 'the third subscription');
      source(2).push(event(1)); // progress
      source(2).drop(new Error('third'));
      await waitFor(() => opened.length === 4, 'the fourth subscription');
      source(3).push(skipped(2)); // progress too: the next subscription starts later
      source(3).drop(new Error('fourth'));
      await waitFor(() => opened.length === 5, 'the fifth subscription');
      source(4).push(event(1)); // a repeat of what was delivered is not progress
      source(4).drop(new Error('fifth'));
      await waitFor(() => opened.length === 6, 'the sixth subscription');

      expect(delays()).toEqual([5, 10, 5, 5, 10]);
    });

    it('jitters the backoff', async () => {
      const { opened, source, delays } = follow({ random: () => 0 });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).drop(new Error('gone'));
      await waitFor(() => opened.length === 2, 'the resubscription');
      source(1).drop(new Error('gone'));
      await waitFor(() => opened.length === 3, 'the resubscription');

      expect(delays()).toEqual([3, 5]); // half of 5 and of 10
    });
  });

  describe('failures', () => {
    it('stops and calls onError once when the handler throws, without resubscribing', async () => {
      const failure = new Error('handler failed');
      const attempted: string[] = [];
      const { opened, source, errors, finished } = follow({
        onEvent: async (recorded) => {
          attempted.push(recorded.position);
          if (recorded.position === '2') throw failure;
        },
      });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).push(event(1), event(2), event(3));

      await waitFor(() => errors.length === 1, 'onError');
      // Finished for good: it can neither deliver nor resubscribe any more.
      await waitFor(() => finished() === 1, 'the follower to finish');
      expect(errors).toEqual([failure]);
      expect(attempted).toEqual(['1', '2']);
      expect(opened).toHaveLength(1);
      expect(source(0).closed).toBe(true);
    });

    it('stops and calls onError on a source error that resubscribing cannot cure', async () => {
      const denied = new Error('access denied');
      const { opened, source, errors, finished } = follow({ isPermanent: (error) => error === denied });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).drop(denied);

      await waitFor(() => errors.length === 1, 'onError');
      await waitFor(() => finished() === 1, 'the follower to finish');
      expect(errors).toEqual([denied]);
      expect(opened).toHaveLength(1);
    });

    it('wraps what is thrown that is not an Error', async () => {
      const { opened, source, errors } = follow({
        onEvent: async () => {
          throw 'just a string';
        },
      });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).push(event(1));

      await waitFor(() => errors.length === 1, 'onError');
      expect(errors[0]).toBeInstanceOf(Error);
      expect(errors[0]!.message).toBe('just a string');
    });
  });

  describe('watchdog', () => {
    it('restarts a silent subscription, after the last delivered position, when the store has something for it', async () => {
      const { opened, source, stallChecks, errors, warnings } = follow({
        stallTimeoutMs: 40,
        isStalled: async (lastSeen) => {
          stallChecks.push(lastSeen);
          return true;
        },
      });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).push(event(1));

      await waitFor(() => opened.length === 2, 'the restart');
      expect(stallChecks[0]).toBe('1');
      expect(opened[1]!.from).toBe('1');
      expect(source(0).closed).toBe(true);
      expect(errors).toEqual([]);
      expect(warnings[0]).toMatch(/nothing received for 40 ms/);
    });

    it('asks twice before restarting: an event pushed just after the first answer cancels the restart', async () => {
      const { opened, source, stallChecks, delivered } = follow({
        stallTimeoutMs: 60,
        isStalled: async (lastSeen) => {
          stallChecks.push(lastSeen);
          return true;
        },
      });
      await waitFor(() => opened.length === 1, 'the subscription');
      await waitFor(() => stallChecks.length === 1, 'the first stall check');

      source(0).push(event(1)); // the event the store knew about, arriving late
      await waitFor(() => delivered.length === 1, 'the event');
      expect(opened).toHaveLength(1);
      expect(stallChecks).toHaveLength(1);

      // Silent again, with the store still saying there is more: now it restarts, after two answers.
      await waitFor(() => opened.length === 2, 'the restart');
      expect(stallChecks).toEqual([undefined, '1', '1']);
      expect(opened[1]!.from).toBe('1');
    });

    it('leaves a silent subscription alone while the store has nothing for it, asking once per period', async () => {
      const { opened, stallChecks } = follow({ stallTimeoutMs: 30 });
      await waitFor(() => opened.length === 1, 'the subscription');
      const since = Date.now();

      // Three "nothing for you" answers later, it still follows the same subscription...
      await waitFor(() => stallChecks.length >= 3, 'three stall checks');
      expect(opened).toHaveLength(1);
      // ...and it asked no more than once per 30 ms period (plus the one that may be under way).
      expect(stallChecks.length).toBeLessThanOrEqual(Math.floor((Date.now() - since) / 30) + 1);
    });

    it('takes heartbeats and checkpoints as signs of life, and checks from the last checkpoint', async () => {
      const { opened, stallChecks } = follow({ stallTimeoutMs: 60 });
      await waitFor(() => opened.length === 1, 'the subscription');
      const { signals } = opened[0]!;

      for (let i = 0; i < 10; i++) {
        signals.alive();
        await sleep(15);
      }
      expect(stallChecks).toEqual([]);

      signals.alive('7');
      await waitFor(() => stallChecks.length === 1, 'the stall check');
      expect(stallChecks).toEqual(['7']);
    });

    it('restarts from the last delivered position, not from a later checkpoint', async () => {
      const { opened, source, delivered } = follow({ stallTimeoutMs: 30, isStalled: async () => true });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).push(event(3));
      await waitFor(() => delivered.length === 1, 'the event');
      opened[0]!.signals.alive('9');

      await waitFor(() => opened.length === 2, 'the restart');
      expect(opened[1]!.from).toBe('3');
    });

    it('restarts when the store does not answer the stall check', async () => {
      const { opened, warnings, errors } = follow({
        stallTimeoutMs: 30,
        isStalled: async () => {
          throw new Error('deadline exceeded');
        },
      });
      await waitFor(() => opened.length === 2, 'the restart');

      expect(warnings[0]).toMatch(/stall check got no answer from the store: deadline exceeded/);
      expect(errors).toEqual([]);
    });

    it('does not count the time spent in a handler as silence', async () => {
      let handled = false;
      const { opened, source, stallChecks } = follow({
        stallTimeoutMs: 30,
        isStalled: async (lastSeen) => {
          stallChecks.push(lastSeen);
          return true;
        },
        onEvent: async () => {
          await sleep(150);
          handled = true;
        },
      });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).push(event(1));

      await waitFor(() => handled, 'the slow handler');
      expect(stallChecks).toEqual([]);
      expect(opened).toHaveLength(1);
    });

    it('ignores a stall verdict reached while an item arrived', async () => {
      let checks = 0;
      let release!: (stalled: boolean) => void;
      const { opened, source, delivered } = follow({
        stallTimeoutMs: 20,
        isStalled: () => {
          checks += 1;
          return checks === 1 ? new Promise<boolean>((resolve) => (release = resolve)) : Promise.resolve(false);
        },
      });
      await waitFor(() => opened.length === 1, 'the subscription');
      await waitFor(() => checks === 1, 'the stall check');

      source(0).push(event(1));
      await waitFor(() => delivered.length === 1, 'the event');
      release(true);
      // The next check (answered "not stalled") comes only once the first verdict was dealt with.
      await waitFor(() => checks === 2, 'the next stall check');

      expect(opened).toHaveLength(1);
    });

    it('ignores a stall verdict reached while a sign of life arrived', async () => {
      let checks = 0;
      let release!: (stalled: boolean) => void;
      const { opened } = follow({
        stallTimeoutMs: 20,
        isStalled: () => {
          checks += 1;
          return checks === 1 ? new Promise<boolean>((resolve) => (release = resolve)) : Promise.resolve(false);
        },
      });
      await waitFor(() => opened.length === 1, 'the subscription');
      await waitFor(() => checks === 1, 'the stall check');

      opened[0]!.signals.alive();
      release(true);
      await waitFor(() => checks === 2, 'the next stall check');

      expect(opened).toHaveLength(1);
    });

    it('ignores signals of a subscription it has replaced', async () => {
      const { opened, source, stallChecks } = follow({ stallTimeoutMs: 40 });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).drop(new Error('gone'));
      await waitFor(() => opened.length === 2, 'the resubscription');

      opened[0]!.signals.alive('100');
      await waitFor(() => stallChecks.length === 1, 'the stall check');
      expect(stallChecks).toEqual([undefined]);
    });
  });

  describe('close', () => {
    it('waits for the in-flight handler, then delivers nothing more and closes the source', async () => {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const started: string[] = [];
      const finished: string[] = [];
      const { follower, opened, source } = follow({
        onEvent: async (recorded) => {
          started.push(recorded.position);
          await released;
          finished.push(recorded.position);
        },
      });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).push(event(1), event(2));
      await waitFor(() => started.length === 1, 'the first delivery');
      const idle = follow();
      await waitFor(() => idle.opened.length === 1, 'an idle follower');

      let closed = false;
      const closing = follower.close().then(() => (closed = true));
      // Closing a follower with nothing in flight completes: all close() does but wait for the
      // handler is done by then, so only the handler can still hold this one open.
      await idle.follower.close();
      expect(closed).toBe(false);
      release();
      await closing;

      expect(finished).toEqual(['1']);
      expect(started).toEqual(['1']);
      expect(source(0).closed).toBe(true);
      await follower.close(); // closing twice is harmless
    });

    it('can be closed from inside its own handler', async () => {
      let closedInside = false;
      const seen: string[] = [];
      const holder: { follower?: ResubscribingFollower } = {};
      const { follower, opened, source } = follow({
        onEvent: async (recorded) => {
          seen.push(recorded.position);
          await holder.follower!.close();
          closedInside = true;
        },
      });
      holder.follower = follower;
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).push(event(1), event(2));

      await waitFor(() => closedInside, 'the handler to close its follower', 1000);
      await follower.close();
      expect(seen).toEqual(['1']);
    });

    it('returns even when the source never settles, not even on close', async () => {
      const hanging = new FakeSource({ hangOnClose: true });
      const { follower } = follow({ open: () => hanging });
      await waitFor(() => hanging.pulls === 1, 'the pull');

      const started = Date.now();
      await follower.close();
      expect(hanging.closed).toBe(true);
      expect(Date.now() - started).toBeLessThan(3000);
    });

    it('stops resubscribing when closed during the backoff', async () => {
      const { follower, opened, source, warnings, finished } = follow({ backoff: { initialMs: 20_000, maxMs: 20_000 } });
      await waitFor(() => opened.length === 1, 'the subscription');
      source(0).drop(new Error('gone'));
      await waitFor(() => warnings.length === 1, 'the backoff to start');

      const started = Date.now();
      await follower.close();
      // Well before the 20 s backoff is over; finished, so it can no longer resubscribe.
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(finished()).toBe(1);
      expect(opened).toHaveLength(1);
    });

    it('closes before it ever subscribed', async () => {
      const { follower, opened, finished } = follow();
      await follower.close();
      expect(opened).toHaveLength(0);
      expect(finished()).toBe(1);
    });
  });

  it('rejects a stall timeout that is not positive', () => {
    expect(() => follow({ stallTimeoutMs: 0 })).toThrow(/stallTimeoutMs/);
  });
});
