import { ServiceConfig } from '@campaign-ops/service-runtime';
import { Delivery } from '@campaign-ops/webhook-domain';
import { DeliveryLoop } from './delivery-loop';
import { DeliveryWorker } from './delivery-worker';

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
    const worker = {
      leaseUntil: () => '2099-01-01T00:00:00.000Z',
      claimDue: async () => null,
      endpointsWithDueWork: async () => [],
      send: (_delivery: Delivery, answered: () => void) => {
        answers.push(answered);
        return new Promise<void>((resolve) => finishes.push(resolve));
      },
    } as unknown as DeliveryWorker;
    loop = new DeliveryLoop(worker, { webhook: { concurrency: 3, endpointConcurrency: 2 } } as ServiceConfig);
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

  it('reserves nothing once stopping, and a lane reserved before sends nothing after', async () => {
    const lane = loop.reserve('whk_1')!;
    await loop.stop();
    lane.send(delivery('dlv_2'));
    expect(finishes).toEqual([]);
    expect(loop.reserve('whk_1')).toBeNull();
  });
});
