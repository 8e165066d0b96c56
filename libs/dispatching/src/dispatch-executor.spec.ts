import { AdNetwork, AdNetworks } from '@campaign-ops/ad-networks';
import { failure, providerRefusal, success } from '@campaign-ops/api-errors';
import { InProcessBus } from '@campaign-ops/adapters/bus';
import { CampaignSpec, ProviderError, SandboxSimulator } from '@campaign-ops/channels';
import { Dispatch, dispatchStreamId } from '@campaign-ops/dispatch-domain';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { ConnectionAccessRequest, ConnectionReauthRequiredRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { DispatchExecutor } from './dispatch-executor';
import { RelayedEvent } from './dispatch-relay';
import { DispatchStore } from './dispatch-store';
import { LiveLaunches } from './live-launches';

const campaign: CampaignSpec = {
  name: 'Spring',
  objective: 'conversion',
  budget: { amount_micros: 50_000_000, currency: 'EUR', type: 'daily' },
  schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
};

/**
 * An ad network as the port sees it, scripted per call: each entry of `answers` is what the next
 * createCampaign does (a campaign id: made and answered; an error: refused; `lost`: made, then the
 * answer lost with that error). It holds what it made, each with the dispatch it was made for,
 * and answers lookups from that unless `lookupFaults` has an error for the next one. (The
 * adapters themselves are tested against HTTP fakes of the networks.)
 */
type Answer = string | ProviderError | { lost: ProviderError; id: string };
class ScriptedNetwork implements Partial<AdNetwork> {
  readonly calls: Array<{ accessToken: string; currency: string }> = [];
  readonly lookups: string[] = [];
  readonly campaigns: Array<{ id: string; dispatchId: string }> = [];
  readonly lookupFaults: ProviderError[] = [];
  /** Set to make the next create hang for ever after it made the campaign (the process dies meanwhile). */
  hangAfterCreate = false;
  constructor(private readonly answers: Answer[]) {}
  async createCampaign(access: Parameters<AdNetwork['createCampaign']>[0], request: Parameters<AdNetwork['createCampaign']>[1]) {
    this.calls.push({ accessToken: access.accessToken, currency: access.account.currency });
    const answer = this.answers.shift() ?? new ProviderError('validation', 'no more answers scripted', 'SCRIPT');
    if (answer instanceof ProviderError) throw answer;
    const id = typeof answer === 'string' ? answer : answer.id;
    this.campaigns.push({ id, dispatchId: request.dispatchId });
    if (this.hangAfterCreate) return new Promise<never>(() => undefined);
    if (typeof answer !== 'string') throw answer.lost;
    return { providerResourceId: id };
  }
  async findCampaigns(_access: unknown, request: Parameters<AdNetwork['findCampaigns']>[1]) {
    this.lookups.push(request.dispatchId);
    const fault = this.lookupFaults.shift();
    if (fault) throw fault;
    return this.campaigns.filter((c) => c.dispatchId === request.dispatchId).map((c) => ({ providerResourceId: c.id }));
  }
  of(dispatchId: string) {
    return this.campaigns.filter((c) => c.dispatchId === dispatchId);
  }
}
const timeout = () => new ProviderError('transient', 'meta_ads did not answer POST /v24.0/act_1234/campaigns within 30000 ms', null);

describe('the dispatch executor', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let bus: InProcessBus;
  let store: DispatchStore;
  /** What connection-service was asked, and what it answers (a fresh token per refresh). */
  let accessRequests: ConnectionAccessRequest[];
  let reauthReports: ConnectionReauthRequiredRequest[];
  let refreshRefused: boolean;
  let accountCurrency: string;

  beforeEach(async () => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    bus = InProcessBus.open();
    store = new DispatchStore(events, reads);
    accessRequests = [];
    reauthReports = [];
    refreshRefused = false;
    accountCurrency = 'EUR';
    await bus.respond<ConnectionAccessRequest>(SUBJECTS.connectionAccess, async (request) => {
      accessRequests.push(request);
      // As connection-service: the currency first, before any token is read or refreshed.
      if (request.currency !== accountCurrency)
        return providerRefusal(`The budget is in ${request.currency} but the account bills in ${accountCurrency}.`, 'currency_mismatch');
      if (request.forceRefresh && refreshRefused) return failure('connection_reauth_required', 'The provider refused the refresh token.');
      const token = request.forceRefresh ? 'token-refreshed' : 'token-1';
      return success({
        connectionId: request.connectionId,
        channel: 'meta_ads',
        providerAccountId: '1234',
        accessToken: token,
        tokenVersion: request.forceRefresh ? 2 : 1,
        currency: accountCurrency,
        timezone: 'Europe/Berlin',
      });
    });
    await bus.respond<ConnectionReauthRequiredRequest>(SUBJECTS.connectionReauthRequired, async (request) => {
      reauthReports.push(request);
      return success({});
    });
  });

  afterEach(async () => {
    await bus.close();
    await events.close();
    await reads.close();
  });

  /** Accepts a dispatch, then runs the executor on its acceptance as the bus would hand it over. */
  async function execute(network: ScriptedNetwork | null, options: { mode?: 'live' | 'test'; name?: string; connectionId?: string | null } = {}) {
    const mode = options.mode ?? 'live';
    const id = `dsp_${Math.random().toString(36).slice(2)}`;
    const streamId = dispatchStreamId(id);
    const now = new Date().toISOString();
    await store.repository.execute(
      streamId,
      {
        type: 'CreateDispatch',
        dispatchId: id,
        accountId: 'acct_1',
        mode,
        channel: 'meta_ads',
        campaign: { ...campaign, name: options.name ?? campaign.name },
        connectionId: options.connectionId === undefined ? 'con_1' : options.connectionId,
        idempotencyKey: null,
        now,
      },
      {},
    );
    const networks: AdNetworks = network ? { meta_ads: network as unknown as AdNetwork } : {};
    const executor = new DispatchExecutor(store, new SandboxSimulator({ slowMs: 0 }), new LiveLaunches(networks, bus), { channelRetryMaxWaitMs: 60_000 });
    const [accepted] = await events.readStream(streamId);
    const relayed: RelayedEvent = { ...accepted };
    const outcome = await executor.handle(relayed);
    return { outcome, dispatch: (await store.stateOf(streamId)).state as Dispatch, run: () => executor.handle(relayed), executor, relayed, streamId, id };
  }

  const stateOf = async (streamId: string) => (await store.stateOf(streamId)).state as Dispatch;
  const typesOf = async (streamId: string) => (await events.readStream(streamId)).map((e) => e.type);

  it('creates the campaign with the token connection-service gives, and records the network id', async () => {
    const network = new ScriptedNetwork(['120210000000001']);
    const { dispatch } = await execute(network);
    expect(dispatch).toMatchObject({ status: 'completed', providerResourceId: '120210000000001', attempts: 1, error: null });
    expect(network.calls).toEqual([{ accessToken: 'token-1', currency: 'EUR' }]);
    expect(accessRequests).toEqual([expect.objectContaining({ accountId: 'acct_1', mode: 'live', connectionId: 'con_1', forceRefresh: false })]);
  });

  it("fails a budget in another currency than the ad account's before any call: currency_mismatch, 0 attempts", async () => {
    accountCurrency = 'USD';
    const network = new ScriptedNetwork(['never']);
    const { dispatch } = await execute(network);
    expect(dispatch).toMatchObject({
      status: 'failed',
      attempts: 0,
      error: { code: 'provider_validation_failed', provider_code: 'currency_mismatch', retryable: false },
    });
    expect(dispatch.error?.message).toContain('EUR');
    expect(network.calls).toEqual([]);
    // Asked with the budget's currency, so connection-service refuses before it refreshes anything.
    expect(accessRequests).toEqual([expect.objectContaining({ currency: 'EUR', forceRefresh: false })]);
  });

  describe('at most one campaign per dispatch', () => {
    it('records the try as started before the network is called', async () => {
      const run = await execute(new ScriptedNetwork(['1']));
      expect(await typesOf(run.streamId)).toEqual(['DispatchAccepted', 'DispatchAttemptStarted', 'DispatchCompleted']);
    });

    it.each([
      ['a timeout', timeout()],
      ['a dropped connection', new ProviderError('transient', 'meta_ads could not be reached for POST /v24.0/act_1234/campaigns: UND_ERR_SOCKET', null)],
      ['a 503 answered after the network made it', new ProviderError('transient', 'meta_ads: Service temporarily unavailable', '2', 503)],
    ])('after %s, the next try finds the campaign and completes with it, reconciled: one campaign', async (_, lost) => {
      const network = new ScriptedNetwork([{ lost, id: '120210000000077' }, 'second-campaign']);
      const run = await execute(network);
      expect(run.dispatch).toMatchObject({ status: 'accepted', outcomeUnknown: true });
      await run.run();
      expect(await stateOf(run.streamId)).toMatchObject({ status: 'completed', providerResourceId: '120210000000077', attempts: 2 });
      expect(network.of(run.id)).toHaveLength(1);
      expect(network.lookups).toEqual([run.id]);
      const history = await events.readStream(run.streamId);
      expect(history.map((e) => [e.type, e.data])).toContainEqual([
        'DispatchCompleted',
        expect.objectContaining({ providerResourceId: '120210000000077', reconciled: true }),
      ]);
    });

    it('creates on the next try when the lookup finds nothing (the network failed before making it)', async () => {
      const network = new ScriptedNetwork([timeout(), '120210000000078']);
      const run = await execute(network);
      await run.run();
      expect(await stateOf(run.streamId)).toMatchObject({ status: 'completed', providerResourceId: '120210000000078' });
      expect(network.lookups).toEqual([run.id]);
      expect((await events.readStream(run.streamId)).pop()?.data).not.toHaveProperty('reconciled');
    });

    it('never looks after a refusal the network answered (a rate limit made nothing)', async () => {
      const network = new ScriptedNetwork([new ProviderError('rate_limited', 'slow down', '17', 400, 10), '120210000000079']);
      const run = await execute(network);
      await run.run();
      expect(await stateOf(run.streamId)).toMatchObject({ status: 'completed', providerResourceId: '120210000000079' });
      expect(network.lookups).toEqual([]);
    });

    it('retries a lookup that fails like any transient error, and keeps looking before creating', async () => {
      const network = new ScriptedNetwork([{ lost: timeout(), id: '120210000000080' }]);
      network.lookupFaults.push(new ProviderError('transient', 'meta_ads failed with HTTP 500', '1', 500));
      const run = await execute(network);
      await run.run();
      expect(await stateOf(run.streamId)).toMatchObject({ status: 'accepted', attempts: 2, outcomeUnknown: true });
      await run.run();
      expect(await stateOf(run.streamId)).toMatchObject({ status: 'completed', providerResourceId: '120210000000080', attempts: 3 });
      expect(network.calls).toHaveLength(1);
      expect(network.lookups).toHaveLength(2);
    });

    it('after a restart that finds a try started and never finished, looks first: one campaign, completed', async () => {
      const network = new ScriptedNetwork(['120210000000081', 'second-campaign']);
      network.hangAfterCreate = true;
      const id = `dsp_${Math.random().toString(36).slice(2)}`;
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
      const dying = new DispatchExecutor(store, new SandboxSimulator({ slowMs: 0 }), new LiveLaunches({ meta_ads: network as unknown as AdNetwork }, bus), {
        channelRetryMaxWaitMs: 60_000,
      });
      void dying.handle(relayed); // the network made the campaign; this process dies before the answer
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(network.of(id)).toHaveLength(1);
      network.hangAfterCreate = false;
      const restarted = new DispatchExecutor(store, new SandboxSimulator({ slowMs: 0 }), new LiveLaunches({ meta_ads: network as unknown as AdNetwork }, bus), {
        channelRetryMaxWaitMs: 60_000,
      });
      await restarted.handle(relayed);
      expect(await stateOf(streamId)).toMatchObject({ status: 'completed', providerResourceId: '120210000000081', attempts: 2 });
      expect(network.of(id)).toHaveLength(1);
    });

    it('completes with the oldest of two campaigns with its marker, naming the other in the history', async () => {
      const network = new ScriptedNetwork([{ lost: timeout(), id: 'older' }]);
      const run = await execute(network);
      network.campaigns.push({ id: 'newer', dispatchId: run.id });
      await run.run();
      expect(await stateOf(run.streamId)).toMatchObject({ status: 'completed', providerResourceId: 'older' });
      const completed = (await events.readStream(run.streamId)).pop();
      expect(completed?.data).toMatchObject({ reconciled: true, duplicateProviderResourceIds: ['newer'], warning: expect.stringContaining('newer') });
    });

    it('looks first on a retry of a dispatch that failed after tries of unknown outcome', async () => {
      const network = new ScriptedNetwork(Array.from({ length: 5 }, (_, i) => (i === 4 ? { lost: timeout(), id: '120210000000082' } : timeout())));
      const run = await execute(network);
      for (let i = 0; i < 4; i++) await run.run();
      expect(await stateOf(run.streamId)).toMatchObject({ status: 'failed', outcomeUnknown: true });
      await store.repository.execute(run.streamId, { type: 'RetryDispatch', requestId: null, now: new Date().toISOString() }, {});
      await run.run();
      expect(await stateOf(run.streamId)).toMatchObject({ status: 'completed', providerResourceId: '120210000000082' });
      expect(network.of(run.id)).toHaveLength(1);
    });

    it('looks before repeating a try whose token was refused: a network that made part of it (X: the campaign, not its line item) keeps one campaign', async () => {
      const network = new ScriptedNetwork([
        { lost: new ProviderError('auth', 'Invalid or expired token', '89', 401), id: '120210000000084' },
        'second-campaign',
      ]);
      const run = await execute(network);
      expect(run.dispatch).toMatchObject({ status: 'completed', providerResourceId: '120210000000084', attempts: 1 });
      expect(network.calls.map((c) => c.accessToken)).toEqual(['token-1']);
      expect(network.lookups).toEqual([run.id]);
      expect(network.of(run.id)).toHaveLength(1);
    });

    it('leaves the try to the delivery that started it first: a second one calls nothing', async () => {
      const network = new ScriptedNetwork(['120210000000083']);
      network.hangAfterCreate = true;
      const id = `dsp_${Math.random().toString(36).slice(2)}`;
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
      const executor = new DispatchExecutor(store, new SandboxSimulator({ slowMs: 0 }), new LiveLaunches({ meta_ads: network as unknown as AdNetwork }, bus), {
        channelRetryMaxWaitMs: 60_000,
      });
      // Both read the dispatch before either started its try.
      const stale = await store.stateOf(streamId);
      jest.spyOn(store, 'stateOf').mockResolvedValueOnce(stale).mockResolvedValueOnce(stale);
      void executor.handle(relayed);
      await expect(executor.handle(relayed)).resolves.toBeUndefined();
      expect(network.calls).toHaveLength(1);
      expect((await stateOf(streamId)).attempts).toBe(1);
    });
  });

  it('refreshes a refused token once and repeats the try with the new one', async () => {
    const network = new ScriptedNetwork([new ProviderError('auth', 'Error validating access token', '190', 400), '120210000000002']);
    const { dispatch } = await execute(network);
    expect(dispatch).toMatchObject({ status: 'completed', providerResourceId: '120210000000002', attempts: 1 });
    expect(network.calls.map((c) => c.accessToken)).toEqual(['token-1', 'token-refreshed']);
    expect(accessRequests.map((r) => [r.forceRefresh, r.refusedVersion])).toEqual([
      [false, undefined],
      [true, 1],
    ]);
    expect(reauthReports).toEqual([]);
  });

  it('fails with connection_reauth_required when the refresh is refused (connection-service moved the connection)', async () => {
    refreshRefused = true;
    const network = new ScriptedNetwork([new ProviderError('auth', 'Error validating access token', '190', 400)]);
    const { dispatch } = await execute(network);
    expect(dispatch).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'connection_reauth_required', retryable: false } });
    expect(network.calls).toHaveLength(1);
  });

  it('fails with connection_reauth_required and reports the connection when the refreshed token is refused too', async () => {
    const network = new ScriptedNetwork([new ProviderError('auth', 'expired', '190', 400), new ProviderError('auth', 'expired again', '190', 400)]);
    const { dispatch } = await execute(network);
    expect(dispatch).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'connection_reauth_required', provider_code: '190', retryable: false } });
    expect(reauthReports).toEqual([
      expect.objectContaining({
        accountId: 'acct_1',
        mode: 'live',
        connectionId: 'con_1',
        channel: 'meta_ads',
        reason: 'token_refused:190',
        refusedVersion: 2,
      }),
    ]);
  });

  it("waits the network's own delay after a rate limit, then tries again", async () => {
    const network = new ScriptedNetwork([new ProviderError('rate_limited', 'User request limit reached', '17', 400, 42_000), '120210000000003']);
    const first = await execute(network);
    expect(first.outcome).toEqual({ retryInMs: 42_000 });
    expect(first.dispatch).toMatchObject({ status: 'accepted', attempts: 1 });
    await first.run();
    const { state } = await store.stateOf(dispatchStreamId(first.dispatch.id));
    expect(state).toMatchObject({ status: 'completed', attempts: 2, providerResourceId: '120210000000003' });
  });

  it('waits no longer than CHANNEL_RETRY_MAX_WAIT, whatever the network names', async () => {
    const untilMidnight = new ProviderError('rate_limited', 'Too many requests', 'HTTP_429', 429, 9 * 3_600_000);
    const { outcome } = await execute(new ScriptedNetwork([untilMidnight]));
    expect(outcome).toEqual({ retryInMs: 60_000 });
  });

  it('backs off on a transient error without a named delay, and fails retryable after 5 tries', async () => {
    const answers = Array.from({ length: 5 }, () => new ProviderError('transient', 'Service temporarily unavailable', 'HTTP_503', 503));
    const run = await execute(new ScriptedNetwork(answers));
    expect(run.outcome).toEqual({ retryInMs: 500 });
    for (let i = 0; i < 4; i++) await run.run();
    const { state } = await store.stateOf(dispatchStreamId(run.dispatch.id));
    expect(state).toMatchObject({ status: 'failed', attempts: 5, error: { code: 'provider_unavailable', retryable: true } });
  });

  it("fails with the network's own message and code on a validation error", async () => {
    const network = new ScriptedNetwork([new ProviderError('validation', 'Invalid parameter: daily_budget too low', '100', 400)]);
    const { dispatch } = await execute(network);
    expect(dispatch.error).toEqual({
      code: 'provider_validation_failed',
      message: 'Invalid parameter: daily_budget too low',
      provider_code: '100',
      retryable: false,
    });
  });

  it('records a created campaign even when the store fails for a moment, calling the network once', async () => {
    const network = new ScriptedNetwork(['120210000000009']);
    const append = events.append.bind(events);
    let failures = 2;
    jest.spyOn(events, 'append').mockImplementation(async (...args: Parameters<typeof events.append>) => {
      // Only the outcome's append (the acceptance is written before the executor runs).
      if (args[1][0]?.type === 'DispatchCompleted' && failures-- > 0) throw new Error('SQLITE_BUSY: database is locked');
      return append(...args);
    });
    const { dispatch } = await execute(network);
    expect(dispatch).toMatchObject({ status: 'completed', providerResourceId: '120210000000009' });
    expect(network.calls).toHaveLength(1);
  });

  it('gives up on nothing when connection-service cannot be reached: the message comes back, nothing is recorded', async () => {
    await bus.close();
    bus = InProcessBus.open();
    const network = new ScriptedNetwork(['never']);
    await expect(execute(network)).rejects.toThrow();
    expect(network.calls).toEqual([]);
  });

  it('moves the sandbox connection on [sandbox:reauth], before recording the failure', async () => {
    const { dispatch } = await execute(null, { mode: 'test', name: 'Spring [sandbox:reauth]', connectionId: null });
    expect(dispatch).toMatchObject({ status: 'failed', error: { code: 'connection_reauth_required' } });
    expect(reauthReports).toEqual([
      expect.objectContaining({ accountId: 'acct_1', mode: 'test', connectionId: null, channel: 'meta_ads', reason: 'sandbox_reauth' }),
    ]);
    expect(accessRequests).toEqual([]);
  });

  describe('a test-key acceptance handed over the bus (no state with it)', () => {
    it('runs on the acceptance itself: the stream is not read before the outcome is recorded', async () => {
      const stateRead = jest.spyOn(store, 'stateOf');
      const { dispatch } = await execute(null, { mode: 'test', connectionId: null });
      expect(dispatch).toMatchObject({ status: 'completed', attempts: 1 });
      // Only execute()'s own read of the outcome, after the executor is done.
      expect(stateRead).toHaveBeenCalledTimes(1);
    });

    it('runs the next try when it comes back after a failed one: the stream, past the acceptance, is read', async () => {
      const { outcome, dispatch, run, streamId } = await execute(null, { mode: 'test', name: 'Spring [sandbox:transient]', connectionId: null });
      expect(outcome).toEqual({ retryInMs: expect.any(Number) });
      expect(dispatch).toMatchObject({ status: 'accepted', attempts: 1 });
      // The bus redelivers the same acceptance once the wait is over.
      expect(await run()).toBeUndefined();
      expect(await stateOf(streamId)).toMatchObject({ status: 'completed', attempts: 2 });
      expect(await typesOf(streamId)).toEqual(['DispatchAccepted', 'DispatchAttemptFailed', 'DispatchCompleted']);
    });

    it('does nothing when it comes again after the dispatch completed', async () => {
      const { run, streamId } = await execute(null, { mode: 'test', connectionId: null });
      const before = await typesOf(streamId);
      expect(await run()).toBeUndefined();
      expect(await typesOf(streamId)).toEqual(before);
    });
  });

  it('runs test-key dispatches on the simulator, never asking for a token', async () => {
    const { dispatch } = await execute(null, { mode: 'test', connectionId: null });
    expect(dispatch).toMatchObject({ status: 'completed', providerResourceId: expect.stringMatching(/^sbx_meta_ads_\d+$/) });
    expect(accessRequests).toEqual([]);
  });
});
