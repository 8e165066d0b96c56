/**
 * Kill -9 right after a launch is accepted; after a restart the dispatch completes and its
 * webhooks arrive: at least once, and exactly once per event id once the receiver de-duplicates.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PartnerReceiver, startPartnerReceiver } from '@campaign-ops/testing/webhook-sender';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { newId, ulid, ulidToUuid } from '@campaign-ops/ids';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { metricValue } from '../support/metrics';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

describe('a standalone process killed with SIGKILL', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let receiver: PartnerReceiver;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-crash-'));
    receiver = await startPartnerReceiver();
    service = await ServiceProcess.start('standalone', {
      ADMIN_TOKEN,
      DATA_DIR: dataDir,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1s,1s,2s',
    });
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it.each([['while the provider call is under way', '[sandbox:slow] crash test']])(
    'completes the dispatch and delivers its webhooks after a restart (killed %s)',
    async (_, name) => {
      const keys = await openAccountWithKeys(new PartnerClient(service.url, ADMIN_TOKEN));
      const partner = new PartnerClient(service.url, keys.testKey);
      const endpoint = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.accepted', 'dispatch.completed'] });
      receiver.addSecret(endpoint.body.data.signing_secret);

      const launch = await partner.post('/v1/campaigns', sandboxCampaign(name));
      expect(launch.status).toBe(200);
      const id: string = launch.body.data.id;
      await service.kill();
      await service.start();

      const ofDispatch =
        (event: string, dispatchId = id) =>
        (e: { body: { event: string; data: Record<string, unknown> } }) =>
          e.body.event === event && e.body.data.dispatch_id === dispatchId;
      await receiver.waitFor(ofDispatch('dispatch.accepted'), 30_000);
      await receiver.waitFor(ofDispatch('dispatch.completed'), 30_000);
      const dispatch = await eventually(
        async () => {
          const answer = await partner.get(`/v1/dispatches/${id}`);
          return answer.body.data?.status === 'completed' && answer.body.data;
        },
        15_000,
        'the dispatch to read completed',
      );
      expect(dispatch.attempts).toBe(1);

      // Any extra event for the dispatch would come from its stream, stored before a launch made
      // now; the relay forwards the store in order, so once this later launch's webhook has come
      // through relay, fan-out and delivery, whatever the crash left for the first one has too.
      const marker = await partner.post('/v1/campaigns', sandboxCampaign('after the crash'));
      await receiver.waitFor(ofDispatch('dispatch.completed', marker.body.data.id), 30_000);
      const events = receiver.events().filter((e) => e.body.data.dispatch_id === id);
      expect(events.map((e) => e.body.event).sort()).toEqual(['dispatch.accepted', 'dispatch.completed']);
      const history = await partner.get(`/v1/dispatches/${id}/events`);
      expect(history.body.data.map((e: { type: string }) => e.type)).toEqual(['DispatchAccepted', 'DispatchCompleted']);
      expect(events.find((e) => e.body.event === 'dispatch.completed')!.body.id).toBe(history.body.data[1].id);
    },
  );

  it('finishes the work in flight on SIGTERM, then exits 0', async () => {
    const keys = await openAccountWithKeys(new PartnerClient(service.url, ADMIN_TOKEN));
    const partner = new PartnerClient(service.url, keys.testKey);
    const launch = await partner.post('/v1/campaigns', sandboxCampaign('[sandbox:slow] graceful'));
    const id: string = launch.body.data.id;
    // The signal must find the provider call (about 3 s) under way: wait until the executor has it.
    await eventually(async () => ((await metricValue(service, 'dispatch_provider_calls_in_flight')) ?? 0) > 0, 10_000, 'the provider call to start');
    const stopping = Date.now();
    await service.stop();
    expect(service.lastExit).toEqual({ code: 0, signal: null });
    expect(Date.now() - stopping).toBeGreaterThan(1500);

    await service.start();
    const history = await partner.get(`/v1/dispatches/${id}/events`);
    // Completed before the exit, by the run that was stopping: not redone after the restart.
    expect(history.body.data.map((e: { type: string }) => e.type)).toEqual(['DispatchAccepted', 'DispatchCompleted']);
  });

  it('makes the dispatch a charge paid for, when the process died between the charge and the dispatch', async () => {
    const keys = await openAccountWithKeys(new PartnerClient(service.url, ADMIN_TOKEN));
    const partner = new PartnerClient(service.url, keys.testKey);
    await service.stop();

    // What a crash right after the ledger append leaves behind: a charge, and no dispatch stream.
    const events = SqliteEventStore.open(join(dataDir, 'events.sqlite'));
    const ledger = `credits-${keys.accountId}-test`;
    const history = await events.readStream(ledger);
    const dispatchId = newId('dsp');
    await events.append(
      ledger,
      [
        {
          id: ulidToUuid(ulid()),
          type: 'DispatchCharged',
          data: {
            amount: 1,
            chargedAt: new Date().toISOString(),
            dispatch: { dispatchId, ...sandboxCampaign('Orphaned charge'), connectionId: null, idempotencyKey: null, requestId: null },
          },
          metadata: { accountId: keys.accountId, mode: 'test', version: 1 },
        },
      ],
      { expectedRevision: history[history.length - 1].revision },
    );
    await events.close();

    await service.start();
    const dispatch = await eventually(
      async () => {
        const answer = await partner.get(`/v1/dispatches/${dispatchId}`);
        return answer.status === 200 && answer.body.data.status === 'completed' && answer.body.data;
      },
      15_000,
      'the charged dispatch to be made and completed',
    );
    expect(dispatch).toMatchObject({ id: dispatchId, credits_charged: 1, campaign: expect.objectContaining({ name: 'Orphaned charge' }) });
    expect((await partner.get('/v1/account')).body.data.credits_balance).toBe(999);
    expect((await partner.get('/v1/dispatches')).body.data.map((d: { id: string }) => d.id)).toEqual([dispatchId]);
  });
});
