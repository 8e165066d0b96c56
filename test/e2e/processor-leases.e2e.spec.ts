/**
 * One active instance of each checkpointed processor across replicas: three
 * dispatch-service replicas over NATS and one event store relay and project each event once, in
 * the replica that holds the processor's lease; SIGKILLed, that replica's processors are taken
 * over by another within the lease's TTL, and nothing is lost.
 */
import { join } from 'node:path';
import { CREDIT_LEDGER_STREAM_PREFIX, DISPATCH_STREAM_PREFIX } from '@campaign-ops/dispatch-domain';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { scrapeMetrics, sampleValue } from '../support/metrics';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { AppsOverNats, startAppsOverNats } from '../support/replicas';
import { ServiceProcess } from '../support/service-process';

const TTL_MS = 3_000;
const RENEW_MS = 500;
const PROCESSORS = {
  'dispatch-relay': DISPATCH_STREAM_PREFIX,
  'dispatch-views': DISPATCH_STREAM_PREFIX,
  'credit-ledgers': CREDIT_LEDGER_STREAM_PREFIX,
} as const;
type Processor = keyof typeof PROCESSORS;

describe('three replicas of dispatch-service: each processor runs in one of them', () => {
  let apps: AppsOverNats;
  let partner: PartnerClient;
  const launched: string[] = [];

  beforeAll(async () => {
    apps = await startAppsOverNats(
      { gateways: 1, dispatchServices: 3 },
      { PROCESSOR_LEASE_TTL_MS: String(TTL_MS), PROCESSOR_LEASE_RENEW_MS: String(RENEW_MS) },
    );
    partner = new PartnerClient(apps.gateways[0].url, (await openAccountWithKeys(apps.admin, 'Leases')).testKey);
  }, 90_000);

  afterAll(async () => {
    await apps?.stop();
  });

  /** Per replica: events each processor handled there, and whether it runs there. */
  const scrape = async (replicas: ServiceProcess[]) =>
    Promise.all(
      replicas.map(async (replica) => {
        const metrics = await scrapeMetrics(replica);
        const of = (name: string, processor: Processor) => sampleValue(metrics, name, { processor }) ?? 0;
        return Object.fromEntries(
          Object.keys(PROCESSORS).map((processor) => [
            processor,
            { handled: of('event_processor_events_total', processor as Processor), active: of('event_processor_active', processor as Processor) },
          ]),
        ) as Record<Processor, { handled: number; active: number }>;
      }),
    );

  /** The events each processor follows, as the shared event store holds them. */
  const storedEvents = async (prefix: string) => {
    const store = SqliteEventStore.open(join(apps.dataDir, 'dispatch-service', 'events.sqlite'));
    try {
      return (await store.readAll({ maxCount: 10_000, streamPrefixes: [prefix] })).length;
    } finally {
      await store.close();
    }
  };

  const launch = async (count: number, name: string) => {
    for (let i = 0; i < count; i++) {
      const answer = await partner.post('/v1/campaigns', sandboxCampaign(`${name} ${i}`));
      expect(answer.status).toBe(200);
      launched.push(answer.body.data.id);
    }
  };

  /** Every launch completed (the relay published it to the executor) and reads so (the projection wrote it). */
  const allCompleted = () =>
    eventually(
      async () => {
        const listed = (await partner.get('/v1/dispatches?limit=100')).body.data as Array<{ id: string; status: string }>;
        return listed.length === launched.length && listed.every((d) => d.status === 'completed') && listed;
      },
      60_000,
      'every dispatch to read completed',
    );

  it('relays and projects each event once, in the replica that holds the lease', async () => {
    await launch(12, 'Once');
    await allCompleted();
    for (const [processor, prefix] of Object.entries(PROCESSORS) as Array<[Processor, string]>) {
      const stored = await storedEvents(prefix);
      expect(stored).toBeGreaterThanOrEqual(12);
      const scraped = await eventually(
        async () => {
          const now = await scrape(apps.dispatchServices);
          return now.reduce((sum, replica) => sum + replica[processor].handled, 0) >= stored && now;
        },
        15_000,
        `${processor} to handle every stored event`,
      );
      expect({ processor, handled: scraped.map((replica) => replica[processor].handled).sort((a, b) => b - a) }).toEqual({
        processor,
        handled: [stored, 0, 0],
      });
      expect(scraped.map((replica) => replica[processor].active).sort()).toEqual([0, 0, 1]);
    }
  });

  it('hands each processor of a SIGKILLed holder over to another replica within the TTL, and loses nothing', async () => {
    const before = await scrape(apps.dispatchServices);
    const holder = apps.dispatchServices[before.findIndex((replica) => replica['dispatch-relay'].active === 1)];
    const survivors = apps.dispatchServices.filter((replica) => replica !== holder);
    const heldThere = (Object.keys(PROCESSORS) as Processor[]).filter((processor) => before[apps.dispatchServices.indexOf(holder)][processor].active === 1);

    await holder.kill();
    const killedAt = Date.now();
    const launches = launch(8, 'After the kill');
    const takenOver = await eventually(
      async () => {
        const now = await scrape(survivors);
        return heldThere.every((processor) => now.some((replica) => replica[processor].active === 1)) && Date.now();
      },
      TTL_MS + 10_000,
      'the survivors to take over',
    );
    // Within the TTL, plus a standby's renewal interval and this test's scraping.
    expect(takenOver - killedAt).toBeLessThan(TTL_MS + RENEW_MS + 1_500);
    await launches;
    const completed = await allCompleted();
    expect(completed.map((d) => d.id).sort()).toEqual([...launched].sort());

    const after = await scrape(survivors);
    for (const processor of Object.keys(PROCESSORS) as Processor[]) {
      expect({ processor, active: after.map((replica) => replica[processor].active).sort() }).toEqual({ processor, active: [0, 1] });
    }
  });
});
