import { ServiceConfig } from '@campaign-ops/service-runtime';
import { Delivery } from '@campaign-ops/webhook-domain';
import { DeliveryLoop } from './delivery-loop';
import { DeliveryWorker } from './delivery-worker';

/**
 * A worker whose sends wait for the spec: `answers[i]()` is the partner's answer to the i-th send
 * (its lane is free), `finishes[i]()` its outcome recorded; `sent` lists the deliveries sent.
 */
function fakeWorker(
  sends: { answers: Array<() => void>; finishes: Array<() => void>; sent?: string[] },
  overrides: Record<string, unknown> = {},
): DeliveryWorker {
  return {
    leaseUntil: () => '2099-01-01T00:00:00.000Z',
    lineLeaseUntil: () => '2099-06-01T00:00:00.000Z',
    claimDue: async () => null,
    endpointsWithDueWork: async () => [],
    send: (delivery: Delivery, answered: () => void) => {
      sends.sent?.push(delivery.id);
      sends.answers.push(answered);
      return new Promise<Delivery>((resolve) => sends.finishes.push(() => resolve({ ...delivery, status: 'succeeded', next_attempt_at: null })));
    },
    ...overrides,
  } as unknown as DeliveryWorker;
}

/** Lanes the fan-out reserves for new deliveries: within both limits, freed when the send ends or the lane is given back. */
describe('DeliveryLoop.reserve', () => {
  let finishes: Array<() => void>;
  /** Per send: the partner's answer (the lane's end), before the outcome is recorded. */
  let answers: Array<() => void>;
  let loop: DeliveryLoop;
  const delivery = (id: string) => ({ id, endpoint_id: 'whk_1' }) as Delivery;

  beforeEach(() => {
    finishes = [];
    answers = [];
    loop = new DeliveryLoop(fakeWorker({ answers, finishes }), { webhook: { concurrency: 3, endpointConcurrency: 2 } } as ServiceConfig);
    loop.start();
  });

  afterEach(async () => {
    finishes.forEach((finish) => finish());
    await loop.stop();
  });

  it('gives at most the endpoint limit to one endpoint and the total limit in all', () => {
    const first = [loop.reserve('whk_1'), loop.reserve('whk_1'), loop.reserve('whk_1')];
    expect(first.map((lane) => lane !== null)).toEqual([true, true, false]);
    expect(first[0]!.leaseUntil).toBe('2099-01-01T00:00:00.000Z');
    expect(loop.reserve('whk_2')).not.toBeNull();
    expect(loop.reserve('whk_3')).toBeNull();
  });

  it('frees a lane when its send ends, or when it is given back unused', async () => {
    const sending = loop.reserve('whk_1')!;
    const unused = loop.reserve('whk_1')!;
    expect(loop.reserve('whk_1')).toBeNull();
    sending.send(delivery('dlv_1'));
    expect(finishes).toHaveLength(1);
    unused.release();
    const again = loop.reserve('whk_1');
    expect(again).not.toBeNull();
    expect(loop.reserve('whk_1')).toBeNull();
    finishes[0]();
    await new Promise((resolve) => setImmediate(resolve));
    expect(loop.reserve('whk_1')).not.toBeNull();
    expect(() => unused.release()).toThrow('used twice');
  });

  it('frees a lane once the endpoint has answered, while the outcome is still being recorded; stop waits for the recording', async () => {
    loop.reserve('whk_1')!.send(delivery('dlv_1'));
    loop.reserve('whk_1')!.send(delivery('dlv_2'));
    expect(loop.reserve('whk_1')).toBeNull();
    answers[0]();
    answers[0](); // once only
    // The freed lane is offered to the endpoint's due deliveries first (a claim, which finds none here).
    await new Promise((resolve) => setImmediate(resolve));
    const next = loop.reserve('whk_1');
    expect(next).not.toBeNull();
    expect(loop.reserve('whk_1')).toBeNull();
    next!.release();
    // The send's end does not free the lane a second time.
    finishes[0]();
    await new Promise((resolve) => setImmediate(resolve));
    expect([loop.reserve('whk_1'), loop.reserve('whk_1')].map((lane) => lane !== null)).toEqual([true, false]);

    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    finishes[1]();
    await stopping;
  });

  /** Claims that answer when the spec says so, each the next of `due` (then nothing). */
  function scriptedClaims(due: Delivery[]) {
    const answers: Array<() => void> = [];
    const claims: string[] = [];
    (loop as unknown as { worker: { claimDue: (endpointId: string) => Promise<Delivery | null> } }).worker.claimDue = async (endpointId) => {
      claims.push(endpointId);
      await new Promise<void>((resolve) => answers.push(resolve));
      return due.shift() ?? null;
    };
    return { claims, answer: () => answers.shift()!() };
  }
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it("takes no lane for a new delivery while the endpoint's due deliveries wait, and claims for all its free lanes at once", async () => {
    const { claims, answer } = scriptedClaims([delivery('dlv_due1'), delivery('dlv_due2')]);
    loop.kick(['whk_1']); // the fan-out stored two due (the lanes were full)
    expect(claims).toEqual(['whk_1', 'whk_1']); // one claim per free lane, at once
    expect(loop.reserve('whk_1')).toBeNull(); // its lanes are the claims', and the stored ones go first
    expect(loop.reserve('whk_2')).not.toBeNull(); // another endpoint's new delivery is not held back
    answer();
    answer();
    await settle();
    expect(finishes).toHaveLength(2);
    // A send ends: its lane goes to a claim, which finds nothing due now; new deliveries take lanes again.
    finishes[0]();
    await settle();
    expect(claims).toHaveLength(3);
    answer();
    await settle();
    await settle();
    expect(loop.reserve('whk_1')).not.toBeNull();
  });

  it('claims once when a lane frees with nothing known to wait, and for the other free lanes only once that claim found one', async () => {
    const { claims, answer } = scriptedClaims([delivery('dlv_due1')]);
    loop.reserve('whk_1')!.send(delivery('dlv_new'));
    answers[0](); // the partner answered: the lane is free, and two are now
    expect(claims).toEqual(['whk_1']);
    answer(); // it found one (stored meanwhile by another replica, say): the other free lane claims too
    await settle();
    expect(claims).toEqual(['whk_1', 'whk_1']);
    answer();
    await settle();
    await settle();
    expect(claims).toHaveLength(2);
  });

  it("holds back a new delivery to an endpoint whose stored ones wait, while the loop is busy with another endpoint's claims", async () => {
    let answer!: () => void;
    const busyElsewhere = new Promise<void>((resolve) => (answer = resolve));
    (loop as unknown as { worker: { claimDue: (endpointId: string) => Promise<Delivery | null> } }).worker.claimDue = async (endpointId) => {
      if (endpointId === 'whk_2') await busyElsewhere;
      return null;
    };
    loop.kick(['whk_2']); // its claims hold the loop (two of the three lanes)
    loop.kick(['whk_1']); // stored due for whk_1 meanwhile: served once the loop comes round
    expect(loop.reserve('whk_1')).toBeNull(); // the third lane is free, but whk_1's stored one goes first
    answer();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(loop.reserve('whk_1')).not.toBeNull(); // its claim found nothing due: new ones take lanes again
  });

  it('reserves nothing once stopping, and a lane reserved before sends nothing after', async () => {
    const lane = loop.reserve('whk_1')!;
    await loop.stop();
    lane.send(delivery('dlv_2'));
    expect(finishes).toEqual([]);
    expect(loop.reserve('whk_1')).toBeNull();
  });
});

/** Retries the loop's own sends scheduled: sent at their time, without waiting for the store to be asked. */
describe('DeliveryLoop retries', () => {
  it('given a send that failed with a retry due shortly, when it comes due, then the loop claims for that endpoint (discovery finds nothing)', async () => {
    const claims: Array<{ endpointId: string | undefined; at: number }> = [];
    let discoveries = 0;
    const dueIn = 80;
    const worker = {
      leaseUntil: () => '2099-01-01T00:00:00.000Z',
      claimDue: async (endpointId?: string) => (claims.push({ endpointId, at: Date.now() }), null),
      endpointsWithDueWork: async () => (discoveries++, []),
      send: async (sent: Delivery) => ({ ...sent, status: 'pending', next_attempt_at: new Date(Date.now() + dueIn).toISOString() }) as Delivery,
    } as unknown as DeliveryWorker;
    const loop = new DeliveryLoop(worker, { webhook: { concurrency: 3, endpointConcurrency: 2 } } as ServiceConfig);
    loop.start();
    try {
      const sentAt = Date.now();
      loop.reserve('whk_1')!.send({ id: 'dlv_1', endpoint_id: 'whk_1' } as Delivery);
      await new Promise((resolve) => setTimeout(resolve, 20));
      // The lane freed: one claim for the endpoint then, which found nothing due yet.
      expect(claims.map((claim) => claim.endpointId)).toEqual(['whk_1']);
      await new Promise((resolve) => setTimeout(resolve, dueIn + 100));
      // Due: the endpoint is known to have work, so it claims for both its lanes.
      expect(claims.map((claim) => claim.endpointId)).toEqual(['whk_1', 'whk_1', 'whk_1']);
      expect(claims[1].at - sentAt).toBeGreaterThanOrEqual(dueIn - 5);
      // Only the look at start: the retry was not found by asking the store.
      expect(discoveries).toBe(1);
    } finally {
      await loop.stop();
    }
  });

  it('forgets the retries it was waiting for when it stops', async () => {
    const claims: string[] = [];
    const worker = {
      leaseUntil: () => '2099-01-01T00:00:00.000Z',
      claimDue: async (endpointId: string) => (claims.push(endpointId), null),
      endpointsWithDueWork: async () => [],
      send: async (sent: Delivery) => ({ ...sent, status: 'pending', next_attempt_at: new Date(Date.now() + 50).toISOString() }) as Delivery,
    } as unknown as DeliveryWorker;
    const loop = new DeliveryLoop(worker, { webhook: { concurrency: 3, endpointConcurrency: 2 } } as ServiceConfig);
    loop.start();
    loop.reserve('whk_1')!.send({ id: 'dlv_1', endpoint_id: 'whk_1' } as Delivery);
    await new Promise((resolve) => setTimeout(resolve, 10));
    await loop.stop();
    const before = claims.length;
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(claims).toHaveLength(before);
  });
});

/** A line for new deliveries to an endpoint whose lanes are all taken: sent by its next free lane, without a claim. */
describe('DeliveryLoop.queue', () => {
  let finishes: Array<() => void>;
  let answers: Array<() => void>;
  let sent: string[];
  let claims: string[];
  let released: string[];
  let leaseLeavesTime: boolean;
  let loop: DeliveryLoop;
  const delivery = (id: string, endpointId = 'whk_1') => ({ id, endpoint_id: endpointId, lease_until: '2099-01-01T00:00:00.000Z' }) as Delivery;
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  beforeEach(() => {
    finishes = [];
    answers = [];
    sent = [];
    claims = [];
    released = [];
    leaseLeavesTime = true;
    const worker = fakeWorker(
      { answers, finishes, sent },
      {
        claimDue: async (endpointId: string) => (claims.push(endpointId), null),
        leaveTimeToSend: () => leaseLeavesTime,
        release: async (held: Delivery) => (released.push(held.id), true),
      },
    );
    loop = new DeliveryLoop(worker, { webhook: { concurrency: 3, endpointConcurrency: 2 } } as ServiceConfig);
    loop.start();
  });

  afterEach(async () => {
    finishes.forEach((finish) => finish());
    await loop.stop();
  });

  /** Both of whk_1's lanes sending. */
  const fillLanes = () => ['dlv_1', 'dlv_2'].forEach((id) => loop.reserve('whk_1')!.send(delivery(id)));

  it('has no place while the endpoint has a free lane', () => {
    expect(loop.queue('whk_1')).toBeNull();
    loop.reserve('whk_1')!.send(delivery('dlv_1'));
    expect(loop.queue('whk_1')).toBeNull();
  });

  it('gives the next lane of the endpoint that frees to the first in line, in order, without a claim, and holds four a lane', async () => {
    fillLanes();
    const places = Array.from({ length: 9 }, () => loop.queue('whk_1'));
    expect(places.map((place) => place !== null)).toEqual([...Array(8).fill(true), false]);
    // Leased for a wait in line and a send after it (the worker's line lease), not for a send at once.
    expect(places[0]!.leaseUntil).toBe('2099-06-01T00:00:00.000Z');
    places.slice(2, 8).forEach((place) => place!.release());
    places[0]!.send(delivery('dlv_3'));
    places[1]!.send(delivery('dlv_4'));
    answers[0]();
    expect(sent).toEqual(['dlv_1', 'dlv_2', 'dlv_3']);
    answers[1]();
    expect(sent).toEqual(['dlv_1', 'dlv_2', 'dlv_3', 'dlv_4']);
    await settle();
    expect(claims).toEqual([]);
    // The lanes stayed counted: the endpoint has none free, and the line is empty again (all 8 places free).
    expect(loop.reserve('whk_1')).toBeNull();
    expect(Array.from({ length: 9 }, () => loop.queue('whk_1') !== null)).toEqual([...Array(8).fill(true), false]);
    expect(released).toEqual([]);
  });

  it("has no place while the endpoint's stored deliveries wait due, which go first", () => {
    fillLanes();
    loop.kick(['whk_1']);
    expect(loop.queue('whk_1')).toBeNull();
  });

  it('makes a delivery due again, for a claim, when its lease would end before an attempt could', async () => {
    fillLanes();
    loop.queue('whk_1')!.send(delivery('dlv_3'));
    leaseLeavesTime = false;
    answers[0]();
    // The freed lane's own look for due work (a claim), made at once.
    expect(claims).toEqual(['whk_1']);
    await settle();
    expect(sent).toEqual(['dlv_1', 'dlv_2']);
    expect(released).toEqual(['dlv_3']);
    await settle();
    // Made due, the endpoint was kicked: a claim for it after the release.
    expect(claims).toEqual(['whk_1', 'whk_1']);
  });

  it('makes the line due when another endpoint waits for a lane, so that the round serves both in turn', async () => {
    fillLanes();
    loop.reserve('whk_2')!.send(delivery('dlv_b', 'whk_2')); // the total limit (3) is reached
    loop.queue('whk_1')!.send(delivery('dlv_3'));
    loop.kick(['whk_3']); // whk_3 has deliveries stored due, and waits for a lane
    answers[0]();
    await settle();
    expect(released).toEqual(['dlv_3']);
    expect(sent).not.toContain('dlv_3');
    expect(claims[0]).toBe('whk_3');
  });

  it("makes a delivery due when the endpoint's sends all ended while it was being stored and other endpoints took every lane", async () => {
    fillLanes();
    const stored = loop.queue('whk_1')!;
    const unused = loop.queue('whk_1')!;
    unused.release();
    expect(() => unused.release()).toThrow('used twice');
    answers.forEach((answer) => answer());
    finishes.forEach((finish) => finish());
    await settle();
    await settle();
    // The total limit (3) taken by two other endpoints: no lane of whk_1 now, nor one to come.
    ['whk_2', 'whk_2', 'whk_3'].forEach((id, i) => loop.reserve(id)!.send(delivery(`dlv_other${i}`, id)));
    stored.send(delivery('dlv_3'));
    expect(released).toEqual(['dlv_3']);
    expect(sent).not.toContain('dlv_3');
  });

  it('gives a lane reserved for a new delivery and given back unused, or claimed for nothing, to the line', async () => {
    loop.reserve('whk_1')!.send(delivery('dlv_1'));
    const unused = loop.reserve('whk_1')!;
    loop.queue('whk_1')!.send(delivery('dlv_3'));
    unused.release();
    expect(sent).toEqual(['dlv_1', 'dlv_3']);
    // dlv_1's partner answered: its freed lane makes a claim, and meanwhile a new delivery takes
    // a place in line; the claim finds nothing, and its lane goes to the line.
    answers[0]();
    expect(claims).toEqual(['whk_1']);
    loop.queue('whk_1')!.send(delivery('dlv_4'));
    expect(sent).toEqual(['dlv_1', 'dlv_3']);
    await settle();
    expect(sent).toEqual(['dlv_1', 'dlv_3', 'dlv_4']);
    expect(released).toEqual([]);
  });

  it('sends at once a delivery whose place a freed lane passed over while it was being stored', async () => {
    fillLanes();
    const place = loop.queue('whk_1')!;
    answers[0](); // the line has nothing stored yet: the lane is given back (a claim finds nothing)
    await settle();
    await settle();
    place.send(delivery('dlv_3'));
    expect(sent).toEqual(['dlv_1', 'dlv_2', 'dlv_3']);
    expect(released).toEqual([]);
    expect(loop.reserve('whk_1')).toBeNull(); // both lanes sending again
  });

  it('drops the line when stopping: what it held stays leased, and a lane that frees after sends none of it', async () => {
    fillLanes();
    loop.queue('whk_1')!.send(delivery('dlv_3'));
    const stopping = loop.stop();
    answers.forEach((answer) => answer());
    finishes.forEach((finish) => finish());
    await stopping;
    expect(sent).toEqual(['dlv_1', 'dlv_2']);
    expect(released).toEqual([]);
  });

  it('leaves what waits in line leased once stopping', async () => {
    fillLanes();
    const place = loop.queue('whk_1')!;
    finishes.forEach((finish) => finish());
    await loop.stop();
    place.send(delivery('dlv_3'));
    expect(sent).toEqual(['dlv_1', 'dlv_2']);
    expect(released).toEqual([]);
    expect(loop.queue('whk_1')).toBeNull();
  });
});
