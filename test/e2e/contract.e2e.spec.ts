/**
 * The rest of docs/api.md as a partner's suite exercises it: dispatch operations and the sandbox's
 * magic names and channel rules, webhook management, delivery log and redelivery, the Events API.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcceptedWebhook, PartnerReceiver, startPartnerReceiver } from '@campaign-ops/testing/webhook-sender';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

describe('docs/api.md, the rest of the contract', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let receiver: PartnerReceiver;
  let admin: PartnerClient;
  let partner: PartnerClient;
  let keys: Awaited<ReturnType<typeof openAccountWithKeys>>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-contract-'));
    receiver = await startPartnerReceiver();
    service = await ServiceProcess.start('standalone', {
      ADMIN_TOKEN,
      DATA_DIR: dataDir,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms',
      WEBHOOK_DISABLE_AFTER: '1s',
    });
    admin = new PartnerClient(service.url, ADMIN_TOKEN);
    keys = await openAccountWithKeys(admin, 'Contract');
    partner = new PartnerClient(service.url, keys.testKey);
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const settled = (id: string) =>
    eventually(
      async () => {
        const d = (await partner.get(`/v1/dispatches/${id}`)).body.data;
        return d.status !== 'accepted' && d;
      },
      20_000,
      `dispatch ${id} to settle`,
    );
  const launch = async (name: string, edit: (b: ReturnType<typeof sandboxCampaign>) => void = () => undefined) => {
    const body = sandboxCampaign(name);
    edit(body);
    const answer = await partner.post('/v1/campaigns', body);
    expect(answer.status).toBe(200);
    return answer.body.data.id as string;
  };

  describe('dispatches', () => {
    it('fails [sandbox:fail] with the provider validation error, and retries it without charging again', async () => {
      const id = await launch('Broken [sandbox:fail]');
      const failed = await settled(id);
      expect(failed).toMatchObject({
        status: 'failed',
        error: { code: 'provider_validation_failed', message: expect.any(String), provider_code: expect.any(String), retryable: false },
        failed_at: expect.any(String),
        provider_resource_id: null,
        attempts: 1,
      });
      const before = (await partner.get('/v1/account')).body.data.credits_balance;
      const retried = await partner.post(`/v1/dispatches/${id}/retry`);
      expect(retried.status).toBe(200);
      expect(retried.body.data).toMatchObject({ id, status: 'accepted', error: null, credits_charged: 1 });
      expect((await partner.get('/v1/account')).body.data.credits_balance).toBe(before);
      await settled(id);
      const history = await partner.get(`/v1/dispatches/${id}/events`);
      expect(history.body.data.map((e: { type: string }) => e.type)).toEqual(['DispatchAccepted', 'DispatchFailed', 'DispatchRetried', 'DispatchFailed']);
      expect(history.body.data.map((e: { revision: number }) => e.revision)).toEqual([0, 1, 2, 3]);
      expect(history.body.data[0]).toEqual({
        id: expect.stringMatching(/^evt_/),
        type: 'DispatchAccepted',
        revision: 0,
        data: expect.any(Object),
        occurred_at: expect.any(String),
      });
    });

    it('completes [sandbox:transient] on its second attempt', async () => {
      const id = await launch('Flaky [sandbox:transient]');
      expect(await settled(id)).toMatchObject({ status: 'completed', attempts: 2, provider_resource_id: expect.stringMatching(/^sbx_meta_ads_\d+$/) });
      const types = (await partner.get(`/v1/dispatches/${id}/events`)).body.data.map((e: { type: string }) => e.type);
      expect(types).toEqual(['DispatchAccepted', 'DispatchAttemptFailed', 'DispatchCompleted']);
    });

    it('fails [sandbox:reauth] with connection_reauth_required', async () => {
      const id = await launch('Expired [sandbox:reauth]');
      expect(await settled(id)).toMatchObject({ status: 'failed', error: { code: 'connection_reauth_required', retryable: false } });
    });

    it('completes [sandbox:slow] after about 3 s', async () => {
      const id = await launch('Patient [sandbox:slow]');
      expect((await partner.get(`/v1/dispatches/${id}`)).body.data.status).toBe('accepted');
      const done = await settled(id);
      expect(done.status).toBe('completed');
      expect(Date.parse(done.completed_at) - Date.parse(done.created_at)).toBeGreaterThanOrEqual(2900);
    });

    it('applies the channel’s minimum daily budget in the sandbox', async () => {
      const id = await launch('Tiny', (b) => {
        b.channel = 'tiktok_ads';
        b.campaign.budget.amount_micros = 5_000_000;
      });
      expect(await settled(id)).toMatchObject({
        status: 'failed',
        channel: 'tiktok_ads',
        error: { code: 'provider_validation_failed', provider_code: 'budget_below_minimum' },
      });
    });

    it('lists newest first, filters by status and channel, and pages with starting_after', async () => {
      const other = await openAccountWithKeys(admin, 'Lister');
      const lister = new PartnerClient(service.url, other.testKey);
      const made: string[] = [];
      for (const channel of ['meta_ads', 'google_ads', 'meta_ads'])
        made.push((await lister.post('/v1/campaigns', { ...sandboxCampaign(), channel })).body.data.id);
      const first = await lister.get('/v1/dispatches?limit=2');
      expect(first.body.data.map((d: { id: string }) => d.id)).toEqual([made[2], made[1]]);
      expect(first.body.has_more).toBe(true);
      const second = await lister.get(`/v1/dispatches?limit=2&starting_after=${made[1]}`);
      expect(second.body.data.map((d: { id: string }) => d.id)).toEqual([made[0]]);
      expect(second.body.has_more).toBe(false);
      expect((await lister.get('/v1/dispatches?channel=google_ads')).body.data.map((d: { id: string }) => d.id)).toEqual([made[1]]);
      await Promise.all(made.map((id) => eventually(async () => (await lister.get(`/v1/dispatches/${id}`)).body.data.status === 'completed')));
      expect((await lister.get('/v1/dispatches?status=completed')).body.data).toHaveLength(3);
      expect((await lister.get('/v1/dispatches?status=failed')).body.data).toHaveLength(0);
      const bad = await lister.get('/v1/dispatches?limit=101');
      expect([bad.status, bad.body.error.code, bad.body.error.param]).toEqual([400, 'parameter_invalid', 'limit']);
    });
  });

  describe('webhook endpoints', () => {
    it('reads, updates, rotates the secret (the old one stops at once), logs and redelivers', async () => {
      const created = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.accepted'] });
      const id = created.body.data.id;
      expect((await partner.get(`/v1/webhooks/${id}`)).body.data).toMatchObject({ id, url: receiver.url, events: ['dispatch.accepted'], enabled: true });
      expect((await partner.get(`/v1/webhooks/${id}`)).body.data).not.toHaveProperty('signing_secret');

      const patched = await partner.patch(`/v1/webhooks/${id}`, { events: ['dispatch.completed', 'dispatch.failed'] });
      expect(patched.body.data.events).toEqual(['dispatch.completed', 'dispatch.failed']);

      const rotated = await partner.post(`/v1/webhooks/${id}/rotate-secret`);
      const secret = rotated.body.data.signing_secret;
      expect(secret).toMatch(/^whsec_/);
      expect(secret).not.toBe(created.body.data.signing_secret);
      receiver.setSecret(secret);

      const dispatchId = await launch('Rotated');
      const [completed] = await receiver.waitFor(
        (e: AcceptedWebhook) => e.body.event === 'dispatch.completed' && e.body.data.dispatch_id === dispatchId,
        20_000,
      );
      expect(completed.headers['x-service-signature']).toBe('sha256=' + createHmac('sha256', secret).update(completed.rawBody).digest('hex'));
      expect(receiver.requests().some((r) => (r.body as { data?: { dispatch_id?: string } })?.data?.dispatch_id === dispatchId && !r.signatureValid)).toBe(
        false,
      );

      const log = await eventually(async () => {
        const answer = await partner.get(`/v1/webhooks/${id}/deliveries`);
        return answer.body.data.find((d: { event_id: string; status: string }) => d.event_id === completed.body.id && d.status === 'succeeded') && answer;
      });
      const delivery = log.body.data.find((d: { event_id: string }) => d.event_id === completed.body.id);
      expect(delivery).toEqual({
        id: completed.headers['x-service-delivery-id'],
        event_id: completed.body.id,
        event: 'dispatch.completed',
        status: 'succeeded',
        attempts: 1,
        last_status_code: 200,
        last_error: null,
        next_attempt_at: null,
        created_at: expect.any(String),
      });

      const again = await partner.post(`/v1/webhooks/${id}/deliveries/${delivery.id}/redeliver`);
      expect(again.status).toBe(200);
      expect(again.body.data).toMatchObject({ event_id: completed.body.id, status: 'pending' });
      expect(again.body.data.id).not.toBe(delivery.id);
      await eventually(() =>
        Promise.resolve(
          receiver.requests().some((r) => r.headers['x-service-delivery-id'] === again.body.data.id && (r.body as { id: string }).id === completed.body.id),
        ),
      );
      await partner.delete(`/v1/webhooks/${id}`);
    });

    it('disables an endpoint whose deliveries keep failing, and takes it back with PATCH enabled: true', async () => {
      const created = await partner.post('/v1/webhooks', { url: receiver.url, events: ['dispatch.completed'] });
      const id = created.body.data.id;
      receiver.setSecret(created.body.data.signing_secret);
      receiver.failNext(100, 500);
      // Disabled once its deliveries have failed for WEBHOOK_DISABLE_AFTER (1 s), however long the
      // machine takes to get there: keep failing deliveries coming, a launch at a time once the last
      // one's webhook was refused, until the endpoint is disabled. A retry of an earlier webhook can
      // disable it while a launch is on its way: that launch's webhook is then never sent, so each
      // wait ends on the refusal or on the endpoint being disabled, whichever comes first.
      const refused = (dispatchId: string) =>
        receiver.requests().some((r) => r.status === 500 && (r.body as { data?: { dispatch_id?: string } })?.data?.dispatch_id === dispatchId);
      const endpointIfDisabled = async () => {
        const endpoint = (await partner.get(`/v1/webhooks/${id}`)).body.data;
        return endpoint.enabled === false && endpoint;
      };
      const disabled = await eventually(
        async () => {
          const dispatchId = await launch('Into the void');
          await eventually(async () => refused(dispatchId) || (await endpointIfDisabled()), 10_000, 'its webhook to be refused, or the endpoint disabled');
          return endpointIfDisabled();
        },
        25_000,
        'the endpoint to be disabled',
      );
      expect(disabled.disabled_reason).toEqual(expect.any(String));
      receiver.failNext(0);
      const enabled = await partner.patch(`/v1/webhooks/${id}`, { enabled: true });
      expect(enabled.body.data).toMatchObject({ enabled: true, disabled_reason: null });
      await partner.delete(`/v1/webhooks/${id}`);
    });
  });

  describe('events API', () => {
    it('lists the account’s events in the webhook shape, filters them, and reads one', async () => {
      const id = await launch('Audited');
      await settled(id);
      const all = await eventually(async () => {
        const answer = await partner.get('/v1/events?limit=100');
        return (
          answer.body.data.some((e: { data: { dispatch_id: string }; event: string }) => e.data.dispatch_id === id && e.event === 'dispatch.completed') &&
          answer
        );
      });
      const completed = all.body.data.find(
        (e: { data: { dispatch_id: string }; event: string }) => e.data.dispatch_id === id && e.event === 'dispatch.completed',
      );
      expect(completed).toEqual({
        id: expect.stringMatching(/^evt_/),
        event: 'dispatch.completed',
        timestamp: expect.any(String),
        data: expect.objectContaining({ dispatch_id: id, status: 'completed' }),
      });
      const onlyAccepted = await partner.get('/v1/events?type=dispatch.accepted&limit=100');
      // Not empty (every() holds on an empty list): this dispatch's acceptance is there, alone of its kind.
      expect(onlyAccepted.body.data.filter((e: { data: { dispatch_id: string } }) => e.data.dispatch_id === id).map((e: { event: string }) => e.event)).toEqual(
        ['dispatch.accepted'],
      );
      expect(onlyAccepted.body.data.every((e: { event: string }) => e.event === 'dispatch.accepted')).toBe(true);
      const future = await partner.get('/v1/events?created_after=2099-01-01T00:00:00Z');
      expect(future.body.data).toEqual([]);
      expect((await partner.get(`/v1/events/${completed.id}`)).body.data).toEqual(completed);
      const stranger = await openAccountWithKeys(admin, 'Stranger');
      const answer = await new PartnerClient(service.url, stranger.testKey).get(`/v1/events/${completed.id}`);
      expect([answer.status, answer.body.error.code]).toEqual([404, 'resource_missing']);
      expect((await new PartnerClient(service.url, keys.liveKey).get('/v1/events')).body.data).toEqual([]);
    });
  });
});
