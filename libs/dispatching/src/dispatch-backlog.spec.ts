import { Bus } from '@campaign-ops/bus';
import { BacklogBound, DispatchBacklog, EXECUTOR_DURABLE, executorOnBus, SAMPLE_EVERY_MS, STALLED_PACE_PER_SECOND } from './dispatch-backlog';

/** Within 5 s of the last reading of every boundAfter here (its readings come from 1_000_000 on). */
const NOW = 1_006_000;

/** Readings one second apart from t0: [pending, settled] each. */
function boundAfter(boundSeconds: number, readings: Array<[number, number]>, stepMs = 1_000): BacklogBound {
  const bound = new BacklogBound(boundSeconds);
  readings.forEach(([pending, settled], i) => bound.observe(1_000_000 + i * stepMs, { pending, settled }));
  return bound;
}

describe('the overload rule (docs/api.md#dispatches-and-retries, "Overload")', () => {
  it('given one reading only, refuses nothing, however much waits: no pace is known yet', () => {
    expect(boundAfter(10, [[100_000, 0]]).verdict(NOW)).toEqual({ refuse: false });
  });

  it('given a pace of 20/s and a bound of 10 s, takes a launch while 200 wait, and refuses one at 201 for the time the excess takes', () => {
    expect(
      boundAfter(10, [
        [0, 0],
        [200, 20],
      ]).verdict(NOW),
    ).toEqual({ refuse: false });
    expect(
      boundAfter(10, [
        [0, 0],
        [201, 20],
      ]).verdict(NOW),
    ).toEqual({ refuse: true, retryAfterSeconds: 1, waiting: 201, pace: 20 });
    expect(
      boundAfter(10, [
        [0, 0],
        [300, 20],
      ]).verdict(NOW),
    ).toEqual({ refuse: true, retryAfterSeconds: 5, waiting: 300, pace: 20 });
  });

  it('asks to wait at most the bound itself', () => {
    expect(
      boundAfter(10, [
        [0, 0],
        [100_000, 20],
      ]).verdict(NOW),
    ).toMatchObject({ refuse: true, retryAfterSeconds: 10 });
  });

  it('averages the pace over readings, the latest weighing half', () => {
    // 20/s, then 60/s: 40/s, so 400 waiting is within 10 s and 401 is not.
    expect(
      boundAfter(10, [
        [0, 0],
        [0, 20],
        [400, 80],
      ]).verdict(NOW),
    ).toEqual({ refuse: false });
    expect(
      boundAfter(10, [
        [0, 0],
        [0, 20],
        [401, 80],
      ]).verdict(NOW),
    ).toMatchObject({ refuse: true, pace: 40 });
  });

  it('given an executor that settled nothing while work waited, assumes a stalled pace rather than none', () => {
    const stalled = STALLED_PACE_PER_SECOND * 10;
    expect(
      boundAfter(10, [
        [50, 7],
        [stalled, 7],
      ]).verdict(NOW),
    ).toEqual({ refuse: false });
    expect(
      boundAfter(10, [
        [50, 7],
        [stalled + 1, 7],
      ]).verdict(NOW),
    ).toMatchObject({ refuse: true, pace: STALLED_PACE_PER_SECOND });
  });

  it('refuses nothing on a reading older than 5 s: the backlog it saw may be gone', () => {
    const bound = boundAfter(10, [
      [0, 0],
      [100_000, 20],
    ]);
    expect(bound.verdict(1_001_000 + 5_000)).toMatchObject({ refuse: true });
    expect(bound.verdict(1_001_000 + 5_001)).toEqual({ refuse: false });
  });

  it('starts over after readings too far apart (an idle spell tells nothing of the pace now)', () => {
    expect(
      boundAfter(
        10,
        [
          [0, 0],
          [100_000, 20],
        ],
        6_000,
      ).verdict(NOW),
    ).toEqual({ refuse: false });
    expect(
      boundAfter(
        10,
        [
          [0, 0],
          [100_000, 20],
        ],
        5_000,
      ).verdict(NOW),
    ).toMatchObject({ refuse: true });
  });

  it('starts over when the count of settled deliveries went back (the consumer was made again), or a reading is not later', () => {
    expect(
      boundAfter(10, [
        [0, 500],
        [100_000, 20],
      ]).verdict(NOW),
    ).toEqual({ refuse: false });
    const bound = boundAfter(10, [
      [0, 0],
      [100_000, 20],
    ]);
    bound.observe(1_001_000, { pending: 100_000, settled: 40 });
    expect(bound.verdict(NOW)).toEqual({ refuse: false });
    // ...and the pace is then learnt afresh from that reading, not from a division by no time.
    bound.observe(1_002_000, { pending: 100_000, settled: 60 });
    expect(bound.verdict(NOW)).toMatchObject({ refuse: true, pace: 20 });
  });
});

describe("reading the executor's progress for the rule", () => {
  /** A bus whose progress readings answer when the spec says so. */
  function busWithReadings() {
    const answers: Array<(progress: { pending: number; settled: number }) => void> = [];
    const bus = { progress: jest.fn(() => new Promise((answer) => answers.push(answer))) };
    return {
      bus: bus as unknown as Bus,
      asked: () => bus.progress.mock.calls.length,
      answer: (pending: number, settled: number) => answers.shift()!({ pending, settled }),
    };
  }

  it('asks nothing while no launch comes, then at most once a second while they do, and never twice at once', async () => {
    const { bus, asked, answer } = busWithReadings();
    const backlog = new DispatchBacklog(executorOnBus(bus), { dispatchBacklogSeconds: 10 });
    let now = 1_000_000;
    backlog.now = () => now;
    expect(asked()).toBe(0);

    backlog.check();
    backlog.check();
    expect(asked()).toBe(1); // one reading under way
    answer(0, 0);
    await backlog.settled();

    now += SAMPLE_EVERY_MS - 1;
    backlog.check();
    expect(asked()).toBe(1); // the latest reading is fresh
    now += 1;
    backlog.check();
    expect(asked()).toBe(2);
    answer(100_000, 20);
    await backlog.settled();
    expect(backlog.check()).toMatchObject({ refuse: true, pace: 20 });
    // The executor's consumer on the bus is the one asked.
    expect(new Set((bus.progress as jest.Mock).mock.calls.map(([durable]) => durable))).toEqual(new Set([EXECUTOR_DURABLE]));
  });
});
