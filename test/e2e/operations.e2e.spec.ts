/**
 * Operating the standalone process: how long SIGTERM waits for work in flight (SHUTDOWN_GRACE_MS),
 * and how many dispatches one process executes at once (EXECUTOR_CONCURRENCY). The gauge
 * dispatch_provider_calls_in_flight shows the provider calls under way; `[sandbox:slow]` takes about 3 s.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { metricValue } from '../support/metrics';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const IN_FLIGHT = 'dispatch_provider_calls_in_flight';

async function partnerOf(service: ServiceProcess): Promise<PartnerClient> {
  const keys = await openAccountWithKeys(new PartnerClient(service.url, ADMIN_TOKEN));
  return new PartnerClient(service.url, keys.testKey);
}

async function launchSlow(partner: PartnerClient, name: string): Promise<string> {
  const launch = await partner.post('/v1/campaigns', sandboxCampaign(`[sandbox:slow] ${name}`));
  if (launch.status !== 200) throw new Error(`launch answered ${launch.status}: ${JSON.stringify(launch.body)}`);
  return launch.body.data.id;
}

/** When the dispatch's outcome was recorded, once it is completed (from its audit trail). */
async function completedAt(partner: PartnerClient, id: string, timeoutMs = 20_000): Promise<number> {
  const completed = await eventually(
    async () => {
      const history = await partner.get(`/v1/dispatches/${id}/events`);
      return history.body.data?.find((e: { type: string }) => e.type === 'DispatchCompleted');
    },
    timeoutMs,
    `dispatch ${id} to complete`,
  );
  return Date.parse(completed.occurred_at);
}

describe('operating the standalone process', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-operations-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  describe('Ctrl-C', () => {
    let service: ServiceProcess;
    afterAll(() => service?.stop());

    it("finishes its graceful stop through a repeated SIGINT (npm start forwards the terminal's), exiting 0 with the work done", async () => {
      service = await ServiceProcess.start('standalone', { ADMIN_TOKEN, DATA_DIR: join(dataDir, 'ctrl-c') });
      const partner = await partnerOf(service);
      const id = await launchSlow(partner, 'interrupted');
      await eventually(async () => (await metricValue(service, IN_FLIGHT)) === 1, 10_000, 'the provider call to be under way');

      await service.interrupt(200);

      expect(service.lastExit).toEqual({ code: 0, signal: null });
      const events = SqliteEventStore.open(join(dataDir, 'ctrl-c', 'events.sqlite'));
      const atExit = await events.readStream(`dispatch-${id}`).finally(() => events.close());
      expect(atExit.map((e) => e.type)).toContain('DispatchCompleted');
    });
  });

  describe('SHUTDOWN_GRACE_MS', () => {
    let service: ServiceProcess;
    afterAll(() => service?.stop());

    it('exits 1 about the grace after SIGTERM when work in flight takes longer, and the work is redone after the restart', async () => {
      const grace = 500;
      service = await ServiceProcess.start('standalone', { ADMIN_TOKEN, DATA_DIR: join(dataDir, 'grace'), SHUTDOWN_GRACE_MS: String(grace) });
      const partner = await partnerOf(service);
      const id = await launchSlow(partner, 'cut short');
      await eventually(async () => (await metricValue(service, IN_FLIGHT)) === 1, 10_000, 'the provider call to be under way');

      const signalled = Date.now();
      await service.stop();
      const tookMs = Date.now() - signalled;
      expect(service.lastExit).toEqual({ code: 1, signal: null });
      // It waited the grace, and not for the provider call to end (the exit code and the stream say so).
      expect(tookMs).toBeGreaterThanOrEqual(grace - 50);
      expect(tookMs).toBeLessThan(grace + 2000);

      // The exit left the dispatch unfinished: accepted, no outcome recorded.
      const events = SqliteEventStore.open(join(dataDir, 'grace', 'events.sqlite'));
      const atExit = await events.readStream(`dispatch-${id}`).finally(() => events.close());
      expect(atExit.map((e) => e.type)).toEqual(['DispatchAccepted']);

      await service.start();
      await completedAt(partner, id);
      const history = await partner.get(`/v1/dispatches/${id}/events`);
      expect(history.body.data.map((e: { type: string }) => e.type)).toEqual(['DispatchAccepted', 'DispatchCompleted']);
      expect((await partner.get(`/v1/dispatches/${id}`)).body.data).toMatchObject({ status: 'completed', attempts: 1 });
    });
  });

  describe('EXECUTOR_CONCURRENCY', () => {
    /**
     * Launches `count` slow dispatches at once on a process with EXECUTOR_CONCURRENCY=`lanes`,
     * sampling the provider calls in flight until all have completed.
     */
    async function runSlowLaunches(lanes: number, count: number): Promise<{ mostAtOnce: number; completed: number[] }> {
      const service = await ServiceProcess.start('standalone', { ADMIN_TOKEN, DATA_DIR: join(dataDir, `lanes-${lanes}`), EXECUTOR_CONCURRENCY: String(lanes) });
      try {
        const partner = await partnerOf(service);
        const ids = await Promise.all(Array.from({ length: count }, (_, i) => launchSlow(partner, `lane test ${i}`)));
        let mostAtOnce = 0;
        let done = false;
        const sampling = (async () => {
          while (!done) {
            mostAtOnce = Math.max(mostAtOnce, (await metricValue(service, IN_FLIGHT)) ?? 0);
            await new Promise((r) => setTimeout(r, 50));
          }
        })();
        const completed = await Promise.all(ids.map((id) => completedAt(partner, id, 30_000))).finally(() => (done = true));
        await sampling;
        return { mostAtOnce, completed: completed.sort((a, b) => a - b) };
      } finally {
        await service.stop();
      }
    }

    // One after the other, slow launches complete at least 3 s apart; side by side, together.
    it('with 1, executes one dispatch at a time: two slow launches complete about 3 s apart', async () => {
      const { mostAtOnce, completed } = await runSlowLaunches(1, 2);
      expect(mostAtOnce).toBe(1);
      expect(completed[1] - completed[0]).toBeGreaterThanOrEqual(2500);
    });

    it('with 2, executes two at once and no more: two of three slow launches complete together, the third about 3 s later', async () => {
      const { mostAtOnce, completed } = await runSlowLaunches(2, 3);
      expect(mostAtOnce).toBe(2);
      expect(completed[1] - completed[0]).toBeLessThan(2500);
      // The third could only begin once a lane was free, after the first had completed.
      expect(completed[2] - completed[0]).toBeGreaterThanOrEqual(2500);
    });
  });
});
