/**
 * Overload (docs/api.md#dispatches-and-retries): on both topologies (the backlog is the dispatches
 * still accepted, every replica's), with a 1-second backlog bound and four
 * executor lanes, slow sandbox launches (`[sandbox:slow]`, about 3 s each) are sent one after the
 * other, a few a second, until the backlog passes the bound (while the lanes settle nothing, the
 * pace taken is 10 a second: about a dozen waiting). From then a launch answers 503 `service_unavailable`
 * with `Retry-After`, and nothing of it is charged or stored; once the backlog is worked off,
 * launches are accepted again, and every accepted one completes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiAnswer, eventually, openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { Topology, TOPOLOGIES } from '../support/live-topology';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
/** Launches sent before giving up on seeing one refused (the bound is a few dozen waiting messages). */
const MAX_LAUNCHES = 60;
const LANES = 4;

describe.each(TOPOLOGIES)('overload, against %s (DISPATCH_BACKLOG_SECONDS=1, four executor lanes)', (_name, startTopology) => {
  let dataDir: string;
  let service: Topology;
  let partner: PartnerClient;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-e2e-overload-'));
    service = await startTopology(join(dataDir, 'service'), { ADMIN_TOKEN, DISPATCH_BACKLOG_SECONDS: '1', EXECUTOR_CONCURRENCY: String(LANES) });
    const admin = new PartnerClient(service.url, ADMIN_TOKEN);
    const keys = await openAccountWithKeys(admin, 'Overloaded Inc');
    partner = admin.as(keys.testKey);
  }, 60_000);

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses launches past the bound with 503 and Retry-After, charging and storing nothing, then takes them again once the backlog is worked off', async () => {
    const balanceBefore = (await partner.get('/v1/account')).body.data.credits_balance as number;
    const accepted: string[] = [];
    let refused: ApiAnswer | undefined;
    for (let i = 0; i < MAX_LAUNCHES && !refused; i++) {
      const answer = await partner.post('/v1/campaigns', sandboxCampaign(`[sandbox:slow] burst ${i}`), { 'Idempotency-Key': `burst-${i}` });
      if (answer.status === 200) accepted.push(answer.body.data.id);
      else if (answer.status === 503) refused = answer;
      else throw new Error(`launch ${i} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    if (!refused) throw new Error(`${MAX_LAUNCHES} slow launches on ${LANES} lanes were all accepted: the backlog is not bounded`);

    expect(refused.body).toEqual({
      success: false,
      error: { type: 'api_error', code: 'service_unavailable', message: expect.stringMatching(/are waiting/) },
      request_id: refused.headers.get('x-request-id'),
    });
    // Whole seconds, at least 1, at most the bound (1 s here).
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('x-request-id')).toMatch(/^req_/);
    // Nothing of the refused launch: charged once per accepted launch, listed as many, and its key is free for a new request.
    expect((await partner.get('/v1/account')).body.data.credits_balance).toBe(balanceBefore - accepted.length);
    const listed = await partner.get('/v1/dispatches?limit=100');
    expect(listed.body.data.map((dispatch: { id: string }) => dispatch.id).sort()).toEqual([...accepted].sort());

    // Worked off, a launch (the refused one's key, another request) is accepted again; every accepted launch completes.
    const again = await eventually(
      async () => {
        const answer = await partner.post('/v1/campaigns', sandboxCampaign('after the burst'), { 'Idempotency-Key': `burst-${accepted.length}` });
        return answer.status === 200 ? answer : undefined;
      },
      (accepted.length / LANES) * 3_500 + 15_000,
      'a launch accepted again',
    );
    expect(again.body.data.status).toBe('accepted');
    await eventually(
      async () => {
        const page = await partner.get('/v1/dispatches?limit=100');
        return page.body.data.every((dispatch: { status: string }) => dispatch.status === 'completed');
      },
      15_000,
      'every accepted launch completed',
    );
  }, 120_000);
});
