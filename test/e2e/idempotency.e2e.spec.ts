/**
 * Idempotency keys (docs/api.md#dispatches-and-retries) against the standalone process, as a partner's retrying client
 * sees them: replays byte for byte, 409s for reuse and for a request still in flight, exactly one
 * dispatch for a hundred simultaneous retries, and keys scoped to account and mode.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAccountWithKeys, PartnerClient, sandboxCampaign } from '../support/partner-client';
import { ServiceProcess } from '../support/service-process';
import { assertAnswerMatchesDocument } from '../support/openapi-answers';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';

interface RawAnswer {
  status: number;
  headers: Headers;
  /** The body exactly as sent. */
  text: string;
  body: any;
}

describe('idempotency keys, against the standalone service', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let admin: PartnerClient;
  let acme: Awaited<ReturnType<typeof openAccountWithKeys>>;
  let globex: Awaited<ReturnType<typeof openAccountWithKeys>>;

  /** A POST whose answer is kept as text, to compare bytes. */
  const post = async (token: string, path: string, body: unknown, idempotencyKey?: string): Promise<RawAnswer> => {
    const response = await fetch(service.url + path, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
        ...(idempotencyKey !== undefined ? { 'Idempotency-Key': idempotencyKey } : {}),
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    await assertAnswerMatchesDocument(service.url, 'POST', path, response.status, response.headers.get('content-type'), JSON.parse(text));
    return { status: response.status, headers: response.headers, text, body: JSON.parse(text) };
  };

  /** The account's dispatches (in the key's mode) made with this idempotency key. */
  const dispatchesWithKey = async (token: string, idempotencyKey: string): Promise<Array<{ id: string }>> => {
    const list = await new PartnerClient(service.url, token).get('/v1/dispatches?limit=100');
    expect(list.status).toBe(200);
    return list.body.data.filter((d: { idempotency_key: string | null }) => d.idempotency_key === idempotencyKey);
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'campaign-ops-e2e-idempotency-'));
    service = await ServiceProcess.start('standalone', {
      ADMIN_TOKEN,
      DATA_DIR: join(dataDir, 'service'),
      // the hundred simultaneous retries below must meet the idempotency check, not the rate limit
      RATE_LIMIT_PER_SECOND: '1000',
      RATE_LIMIT_BURST: '1000',
    });
    admin = new PartnerClient(service.url, ADMIN_TOKEN);
    acme = await openAccountWithKeys(admin, 'Acme');
    globex = await openAccountWithKeys(admin, 'Globex');
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('replays the same request byte for byte with Idempotent-Replayed, and makes one dispatch', async () => {
    const key = 'launch-spring-sale-1';
    const first = await post(acme.testKey, '/v1/campaigns', sandboxCampaign('Spring sale'), key);
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ id: expect.stringMatching(/^dsp_/), status: 'accepted', idempotency_key: key, credits_charged: 1 });
    expect(first.headers.get('idempotent-replayed')).toBeNull();

    const retry = await post(acme.testKey, '/v1/campaigns', sandboxCampaign('Spring sale'), key);
    expect(retry.status).toBe(first.status);
    expect(retry.text).toBe(first.text);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.headers.get('x-request-id')).toBe(first.body.request_id);

    expect(await dispatchesWithKey(acme.testKey, key)).toEqual([expect.objectContaining({ id: first.body.data.id })]);
    // the retry was not charged
    const account = await new PartnerClient(service.url, acme.testKey).get('/v1/account');
    expect(account.body.data.credits_balance).toBe(999);
  });

  it('answers 409 idempotency_key_reused to another request with the same key', async () => {
    const key = 'launch-reused-1';
    const first = await post(acme.testKey, '/v1/campaigns', sandboxCampaign('First'), key);
    expect(first.status).toBe(200);
    const other = await post(acme.testKey, '/v1/campaigns', sandboxCampaign('Second'), key);
    expect(other.status).toBe(409);
    expect(other.body).toEqual({
      success: false,
      error: { type: 'idempotency_error', code: 'idempotency_key_reused', message: expect.any(String), param: 'Idempotency-Key' },
      request_id: expect.stringMatching(/^req_/),
    });
    expect(await dispatchesWithKey(acme.testKey, key)).toHaveLength(1);
  });

  it('makes exactly one dispatch for 100 simultaneous requests with one key', async () => {
    const key = 'launch-stampede-1';
    const answers = await Promise.all(Array.from({ length: 100 }, () => post(acme.testKey, '/v1/campaigns', sandboxCampaign('Stampede'), key)));
    const ran = answers.filter((a) => a.status === 200 && a.headers.get('idempotent-replayed') === null);
    const replayed = answers.filter((a) => a.status === 200 && a.headers.get('idempotent-replayed') === 'true');
    const inUse = answers.filter((a) => a.status === 409 && a.body.error.code === 'idempotency_key_in_use');
    expect(ran).toHaveLength(1);
    expect(replayed.length + inUse.length).toBe(99);
    for (const answer of replayed) expect(answer.text).toBe(ran[0].text);
    for (const answer of inUse) expect(answer.body.error.type).toBe('idempotency_error');

    const made = await dispatchesWithKey(acme.testKey, key);
    expect(made).toEqual([expect.objectContaining({ id: ran[0].body.data.id })]);
    // once it has finished, every retry is the replay
    const later = await post(acme.testKey, '/v1/campaigns', sandboxCampaign('Stampede'), key);
    expect([later.status, later.text, later.headers.get('idempotent-replayed')]).toEqual([200, ran[0].text, 'true']);
  });

  it('does not lock the key on a validation error: the corrected request runs with it', async () => {
    const key = 'launch-fix-me-1';
    const broken = sandboxCampaign('Fix me');
    (broken.campaign.budget as { currency: string }).currency = 'usd';
    const invalid = await post(acme.testKey, '/v1/campaigns', broken, key);
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toMatchObject({ code: 'parameter_invalid', param: 'campaign.budget.currency' });
    const notJson = await post(acme.testKey, '/v1/campaigns', '{"channel": ', key);
    expect([notJson.status, notJson.body.error.code]).toEqual([400, 'body_invalid_json']);

    const fixed = await post(acme.testKey, '/v1/campaigns', sandboxCampaign('Fix me'), key);
    expect(fixed.status).toBe(200);
    expect(fixed.headers.get('idempotent-replayed')).toBeNull();
    const again = await post(acme.testKey, '/v1/campaigns', sandboxCampaign('Fix me'), key);
    expect([again.text, again.headers.get('idempotent-replayed')]).toEqual([fixed.text, 'true']);
    expect(await dispatchesWithKey(acme.testKey, key)).toHaveLength(1);
  });

  it('scopes keys to the account and the mode', async () => {
    const key = 'launch-shared-key-1';
    const atAcme = await post(acme.testKey, '/v1/campaigns', sandboxCampaign('Shared'), key);
    const atGlobex = await post(globex.testKey, '/v1/campaigns', sandboxCampaign('Shared'), key);
    expect([atAcme.status, atGlobex.status]).toEqual([200, 200]);
    expect(atGlobex.headers.get('idempotent-replayed')).toBeNull();
    expect(atGlobex.body.data.id).not.toBe(atAcme.body.data.id);
    expect(await dispatchesWithKey(globex.testKey, key)).toEqual([expect.objectContaining({ id: atGlobex.body.data.id })]);
    expect(await dispatchesWithKey(acme.testKey, key)).toEqual([expect.objectContaining({ id: atAcme.body.data.id })]);

    // the live key of the same account has its own keys: this is a live launch (no connection: 422), not a replay
    const live = await post(acme.liveKey, '/v1/campaigns', sandboxCampaign('Shared'), key);
    expect(live.status).toBe(422);
    expect(live.body.error.code).toBe('connection_required');
    expect(live.headers.get('idempotent-replayed')).toBeNull();
    // ...and that business outcome is what its retries get
    const liveAgain = await post(acme.liveKey, '/v1/campaigns', sandboxCampaign('Shared'), key);
    expect([liveAgain.status, liveAgain.text, liveAgain.headers.get('idempotent-replayed')]).toEqual([422, live.text, 'true']);
  });

  it('works on every POST, the Admin API included', async () => {
    const key = 'open-account-initech-1';
    const first = await post(ADMIN_TOKEN, '/admin/v1/accounts', { name: 'Initech' }, key);
    const again = await post(ADMIN_TOKEN, '/admin/v1/accounts', { name: 'Initech' }, key);
    expect(first.status).toBe(200);
    expect([again.text, again.headers.get('idempotent-replayed')]).toEqual([first.text, 'true']);

    // a business refusal is kept too: retrying an accepted dispatch is 409 dispatch_not_retryable
    const launch = await post(acme.testKey, '/v1/campaigns', sandboxCampaign('Not retryable'));
    const retry = await post(acme.testKey, `/v1/dispatches/${launch.body.data.id}/retry`, '', 'retry-1');
    expect(retry.status).toBe(409);
    expect(retry.body.error.code).toBe('dispatch_not_retryable');
    const retryAgain = await post(acme.testKey, `/v1/dispatches/${launch.body.data.id}/retry`, '', 'retry-1');
    expect([retryAgain.status, retryAgain.text, retryAgain.headers.get('idempotent-replayed')]).toEqual([409, retry.text, 'true']);
  });

  it('refuses a malformed Idempotency-Key with 400 parameter_invalid', async () => {
    const answer = await post(acme.testKey, '/v1/campaigns', sandboxCampaign('Bad key'), 'x'.repeat(256));
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', code: 'parameter_invalid', param: 'Idempotency-Key' });
  });
});
