import { AdNetwork } from '@campaign-ops/ad-networks';
import { providerRefusal, success } from '@campaign-ops/api-errors';
import { InProcessBus } from '@campaign-ops/adapters/bus';
import { CampaignSpec, ProviderError, SandboxSimulator } from '@campaign-ops/channels';
import { Dispatch, dispatchStreamId } from '@campaign-ops/dispatch-domain';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SeededRandom, seededRandom } from '@campaign-ops/testing/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { ConnectionAccessRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { DispatchExecutor } from './dispatch-executor';
import { RelayedEvent } from './dispatch-relay';
import { DispatchStore } from './dispatch-store';
import { LiveLaunches } from './live-launches';

/**
 * docs/api.md#dispatches-and-retries, "At most one campaign per dispatch", as a property: over random interleavings of the
 * ways a network leaves its caller unsure (the campaign made, then a timeout, a 503 or a dropped
 * connection; a 503 before making it; a rate limit; a lookup that fails) and of restarts (the
 * process dying after the network made the campaign, before it was called, during a lookup; two
 * deliveries of the same work at once), a dispatch never has two campaigns at the network, and once
 * the network answers again it ends `completed` with the one campaign it has.
 */
const CASES = 300;
/** Steps with faults before the network answers again; then at most this many more to settle. */
const FAULTY_STEPS = 12;
const SETTLE_STEPS = 12;

const campaign: CampaignSpec = {
  name: 'Spring',
  objective: 'conversion',
  budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
  schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
};

type CreateFault =
  'none' | 'made-then-timeout' | 'made-then-503' | 'made-then-dropped' | '503-before-making' | 'rate-limited' | 'dies-after-making' | 'dies-before-calling';
type LookupFault = 'none' | 'lookup-503' | 'lookup-timeout' | 'dies-during-lookup';
const CREATE_FAULTS: CreateFault[] = [
  'none',
  'made-then-timeout',
  'made-then-503',
  'made-then-dropped',
  '503-before-making',
  'rate-limited',
  'dies-after-making',
  'dies-before-calling',
];
const LOOKUP_FAULTS: LookupFault[] = ['none', 'lookup-503', 'lookup-timeout', 'dies-during-lookup'];

const timeout = () => new ProviderError('transient', 'the network did not answer within 30000 ms', null);
const unavailable = () => new ProviderError('transient', 'the network failed with HTTP 503', 'HTTP_503', 503);

/** A network that holds the campaigns it made and misbehaves as `random` says while `faulty`. */
class RandomNetwork {
  readonly campaigns: Array<{ id: string; dispatchId: string }> = [];
  faulty = true;
  /** Resolves when a call hangs for ever: the process that made it is to be taken as dead. */
  private died: (() => void) | null = null;
  private made = 0;

  constructor(private readonly random: SeededRandom) {}

  /** A promise that resolves when a call of this process hangs (it "died"). */
  watch(): Promise<'died'> {
    return new Promise((resolve) => (this.died = () => resolve('died')));
  }

  async createCampaign(_access: unknown, request: { dispatchId: string }) {
    const fault: CreateFault = this.faulty ? this.random.pick(CREATE_FAULTS) : 'none';
    if (fault === 'dies-before-calling') return this.hang();
    if (fault === '503-before-making') throw unavailable();
    if (fault === 'rate-limited') throw new ProviderError('rate_limited', 'slow down', '17', 400, 1);
    const id = `c${++this.made}`;
    this.campaigns.push({ id, dispatchId: request.dispatchId });
    if (fault === 'made-then-timeout') throw timeout();
    if (fault === 'made-then-503') throw unavailable();
    if (fault === 'made-then-dropped') throw new ProviderError('transient', 'the network could not be reached: UND_ERR_SOCKET', null);
    if (fault === 'dies-after-making') return this.hang();
    return { providerResourceId: id };
  }

  async findCampaigns(_access: unknown, request: { dispatchId: string }) {
    const fault: LookupFault = this.faulty ? this.random.pick(LOOKUP_FAULTS) : 'none';
    if (fault === 'dies-during-lookup') return this.hang();
    if (fault === 'lookup-503') throw unavailable();
    if (fault === 'lookup-timeout') throw timeout();
    return this.of(request.dispatchId).map((c) => ({ providerResourceId: c.id }));
  }

  of(dispatchId: string) {
    return this.campaigns.filter((c) => c.dispatchId === dispatchId);
  }

  private hang(): Promise<never> {
    this.died?.();
    return new Promise<never>(() => undefined);
  }
}

describe('at most one campaign per dispatch, over random faults and restarts', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let bus: InProcessBus;
  let store: DispatchStore;

  beforeAll(async () => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    bus = InProcessBus.open();
    store = new DispatchStore(events, reads);
    await bus.respond<ConnectionAccessRequest>(SUBJECTS.connectionAccess, async (request) =>
      request.currency === 'USD'
        ? success({
            connectionId: request.connectionId,
            channel: 'meta_ads',
            providerAccountId: '1234',
            accessToken: 'token',
            tokenVersion: 1,
            currency: 'USD',
            timezone: 'UTC',
          })
        : providerRefusal('currency', 'currency_mismatch'),
    );
  });

  afterAll(async () => {
    await bus.close();
    await events.close();
    await reads.close();
  });

  it(`holds for ${CASES} seeded cases`, async () => {
    for (let seed = 1; seed <= CASES; seed++) {
      const random = seededRandom(seed);
      const network = new RandomNetwork(random);
      const id = `dsp_prop${seed}`;
      const streamId = dispatchStreamId(id);
      await store.repository.execute(
        streamId,
        {
          type: 'CreateDispatch',
          dispatchId: id,
          accountId: 'acct_1',
          mode: 'live',
          channel: 'meta_ads',
          campaign,
          connectionId: 'con_1',
          idempotencyKey: null,
          now: new Date().toISOString(),
        },
        {},
      );
      const relayed: RelayedEvent = { ...(await events.readStream(streamId))[0] };
      const process = () =>
        new DispatchExecutor(store, new SandboxSimulator({ slowMs: 0 }), new LiveLaunches({ meta_ads: network as unknown as AdNetwork }, bus), {
          channelRetryMaxWaitMs: 0,
        });
      const trace: string[] = [];
      let final: Dispatch | null = null;

      for (let step = 0; step < FAULTY_STEPS + SETTLE_STEPS; step++) {
        network.faulty = step < FAULTY_STEPS;
        const { state } = await store.stateOf(streamId);
        const dispatch = state as Dispatch;
        if (dispatch.status === 'completed') {
          final = dispatch;
          break;
        }
        if (dispatch.status === 'failed') {
          trace.push(`retried after ${dispatch.error?.code}`);
          await store.repository.execute(streamId, { type: 'RetryDispatch', requestId: null, now: new Date().toISOString() }, {});
          continue;
        }
        // Every step runs in a process of its own (a restart, or another replica); sometimes two deliveries at once.
        const deliveries = network.faulty && random.chance(0.15) ? 2 : 1;
        const died = network.watch();
        const ended = await Promise.race([
          Promise.all(Array.from({ length: deliveries }, () => process().handle(relayed))).then(() => 'handled' as const),
          died,
        ]);
        trace.push(`${deliveries} delivery: ${ended}`);
        const campaigns = network.of(id);
        if (campaigns.length > 1) throw new Error(`seed ${seed}: ${campaigns.length} campaigns after ${trace.join(' → ')}`);
      }

      const campaigns = network.of(id);
      if (!final)
        throw new Error(`seed ${seed}: still ${(await store.stateOf(streamId)).state.status} after the network answered again (${trace.join(' → ')})`);
      expect({ seed, campaigns: campaigns.map((c) => c.id) }).toEqual({ seed, campaigns: [final.providerResourceId] });
    }
  }, 120_000);
});
