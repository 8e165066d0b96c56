/**
 * Guarantees that hold across replicas, not merely inside one process: two dispatch-service
 * processes over one event store charge no more credits than an account has, and two gateways
 * over one read store share Idempotency-Keys. See test/support/replicas.ts for the shared stores.
 */
import { randomUUID } from 'node:crypto';
import { SUBJECTS } from '@campaign-ops/service-messages';
import { assertAnswerMatchesDocument } from '../support/openapi-answers';
import { eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { AppsOverNats, RequestWatcher, startAppsOverNats } from '../support/replicas';
import { ServiceProcess } from '../support/service-process';

describe('two replicas of dispatch-service and of the gateway', () => {
  let apps: AppsOverNats;

  beforeAll(async () => {
    apps = await startAppsOverNats({ gateways: 2, dispatchServices: 2 });
  }, 90_000);

  afterAll(async () => {
    await apps?.stop();
  });

  it('charges exactly the credits an account has when launches reach both dispatch-service replicas at once', async () => {
    const CREDITS = 6;
    const LAUNCHES = 40;
    const opened = await apps.admin.post('/admin/v1/accounts', { name: 'Scarce', credits: CREDITS });
    const key = (await apps.admin.post(`/admin/v1/accounts/${opened.body.data.id}/keys`, { mode: 'test' })).body.data.key;
    // Every launch asks connection-service before it charges: who asks tells which replica handles
    // it. connection-service hangs until every launch has asked, so that once it answers, both
    // replicas charge at the same moment (left to chance, their charges would seldom overlap).
    const watcher = await RequestWatcher.start(apps.nats, SUBJECTS.connectionResolve, 'connection-service');
    let answers;
    try {
      apps.connectionService.pause();
      const launches = Promise.all(
        Array.from({ length: LAUNCHES }, (_, i) => new PartnerClient(apps.gateways[i % 2].url, key).post('/v1/campaigns', sandboxCampaign(`Launch ${i}`))),
      );
      try {
        // Well within the 5 s dispatch-service waits for connection-service.
        await eventually(async () => watcher.count() === LAUNCHES, 3_000, 'every launch to ask connection-service');
      } finally {
        apps.connectionService.resume();
      }
      answers = await launches;
    } finally {
      await watcher.close();
    }

    // Both replicas handled launches, so their charges raced each other on the one ledger.
    const perReplica = watcher.senders();
    expect(perReplica).toHaveLength(2);
    expect(Math.min(...perReplica)).toBeGreaterThan(0);

    const statuses = answers.reduce<Record<number, number>>((count, a) => ({ ...count, [a.status]: (count[a.status] ?? 0) + 1 }), {});
    expect(statuses).toEqual({ 200: CREDITS, 402: LAUNCHES - CREDITS });
    expect(new Set(answers.filter((a) => a.status === 402).map((a) => a.body.error.code))).toEqual(new Set(['insufficient_credits']));
    const partner = new PartnerClient(apps.gateways[0].url, key);
    expect((await partner.get('/v1/account')).body.data.credits_balance).toBe(0);
    const listed = (await partner.get('/v1/dispatches?limit=100')).body.data.map((d: { id: string }) => d.id);
    expect(listed.sort()).toEqual(
      answers
        .filter((a) => a.status === 200)
        .map((a) => a.body.data.id)
        .sort(),
    );
  });

  describe('Idempotency-Key across gateways', () => {
    /** A launch whose answer is kept as text, to compare bytes. */
    const launch = async (gateway: ServiceProcess, token: string, key: string, name: string) => {
      const response = await fetch(`${gateway.url}/v1/campaigns`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Idempotency-Key': key },
        body: JSON.stringify(sandboxCampaign(name)),
      });
      const text = await response.text();
      await assertAnswerMatchesDocument(gateway.url, 'POST', '/v1/campaigns', response.status, response.headers.get('content-type'), JSON.parse(text));
      return { gateway, status: response.status, replayed: response.headers.get('idempotent-replayed'), text, body: JSON.parse(text) };
    };

    it('makes one dispatch and one charge for the same key sent to both gateways at once, and both replay it byte for byte', async () => {
      const keys = await openAccountWithKeys(apps.admin, 'Twice');
      const partner = new PartnerClient(apps.gateways[0].url, keys.testKey);
      const before = (await partner.get('/v1/account')).body.data.credits_balance;
      const key = `launch-${randomUUID()}`;

      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => launch(apps.gateways[i % 2], keys.testKey, key, 'Once')));
      const ran = answers.filter((a) => a.status === 200 && a.replayed === null);
      expect(ran).toHaveLength(1);
      // The others met the first one's record, on whichever gateway: its answer, or "still running".
      for (const other of answers.filter((a) => a !== ran[0])) {
        if (other.status === 200) expect([other.replayed, other.text]).toEqual(['true', ran[0].text]);
        else expect([other.status, other.body.error.code]).toEqual([409, 'idempotency_key_in_use']);
      }

      for (const gateway of apps.gateways) {
        const replay = await launch(gateway, keys.testKey, key, 'Once');
        expect([replay.status, replay.replayed, replay.text]).toEqual([200, 'true', ran[0].text]);
      }
      const made = (await partner.get('/v1/dispatches?limit=100')).body.data.filter((d: { idempotency_key: string }) => d.idempotency_key === key);
      expect(made.map((d: { id: string }) => d.id)).toEqual([ran[0].body.data.id]);
      expect((await partner.get('/v1/account')).body.data.credits_balance).toBe(before - 1);

      const otherGateway = apps.gateways.find((g) => g !== ran[0].gateway)!;
      const reused = await launch(otherGateway, keys.testKey, key, 'Another launch');
      expect([reused.status, reused.body.error.code]).toEqual([409, 'idempotency_key_reused']);
    });
  });
});
