import { LocalServices } from '@campaign-ops/service-runtime';
import { AdNetwork, CampaignCheck } from '@campaign-ops/ad-networks';
import { failure, providerRefusal, success } from '@campaign-ops/api-errors';
import { InProcessBus } from '@campaign-ops/adapters/bus';
import { CampaignSpec, ProviderError, SandboxSimulator } from '@campaign-ops/channels';
import { SqliteEventStore } from '@campaign-ops/adapters/event-store';
import { SqliteReadStore } from '@campaign-ops/adapters/read-store';
import { ConnectionAccessRequest, ResolvedConnection, SUBJECTS, ValidateCampaignRequest } from '@campaign-ops/service-messages';
import { CampaignChecks } from './campaign-checks';
import { ChargedDispatches } from './charged-dispatches';
import { CreditLedgers } from './credit-ledgers';
import { DispatchCommands } from './dispatch-commands';
import { DispatchBacklog, executorOnBus } from './dispatch-backlog';
import { DispatchIdempotency } from './dispatch-idempotency';
import { DispatchStore } from './dispatch-store';
import { LiveLaunches } from './live-launches';

const campaign: CampaignSpec = {
  name: 'Spring',
  objective: 'conversion',
  budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
  schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
};

/** The network's validate-only call, scripted: each entry is what the next call answers. */
class CheckingNetwork implements Partial<AdNetwork> {
  readonly checked: Array<{ accessToken: string; dispatchId: string }> = [];
  constructor(private readonly answers: Array<CampaignCheck | ProviderError>) {}
  async validateCampaign(access: Parameters<AdNetwork['validateCampaign']>[0], request: Parameters<AdNetwork['validateCampaign']>[1]) {
    this.checked.push({ accessToken: access.accessToken, dispatchId: request.dispatchId });
    const answer = this.answers.shift() ?? new ProviderError('validation', 'no more answers scripted', 'SCRIPT');
    if (answer instanceof ProviderError) throw answer;
    return answer;
  }
}

describe('the dry run (POST /v1/campaigns/validate) in dispatch-service', () => {
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  let bus: InProcessBus;
  let connection: ResolvedConnection['connection'];
  let accessRequests: ConnectionAccessRequest[];

  const checks = (network: CheckingNetwork | null) => {
    const live = new LiveLaunches(network ? { meta_ads: network as unknown as AdNetwork } : {}, bus);
    const [dispatchStore, ledgers] = [new DispatchStore(events, reads), new CreditLedgers(events, reads)];
    const commands = new DispatchCommands(
      dispatchStore,
      ledgers,
      new ChargedDispatches(dispatchStore, ledgers),
      new DispatchIdempotency(reads),
      bus,
      live,
      new DispatchBacklog(executorOnBus(bus), { dispatchBacklogSeconds: 30 }),
      new LocalServices(),
    );
    return new CampaignChecks(commands, live, new SandboxSimulator({ slowMs: 0 }));
  };
  const request = (mode: 'live' | 'test', overrides: Partial<CampaignSpec> = {}): ValidateCampaignRequest => ({
    caller: { accountId: 'acct_1', mode, requestId: 'req_1' },
    channel: 'meta_ads',
    campaign: { ...campaign, ...overrides },
  });

  beforeEach(async () => {
    events = SqliteEventStore.open(':memory:');
    reads = SqliteReadStore.open(':memory:');
    bus = InProcessBus.open();
    connection = { id: 'con_1', status: 'active' };
    accessRequests = [];
    await bus.respond(SUBJECTS.connectionResolve, async () => ({ connection }));
    await bus.respond<ConnectionAccessRequest>(SUBJECTS.connectionAccess, async (request) => {
      accessRequests.push(request);
      if (request.currency !== 'USD') return providerRefusal(`The budget is in ${request.currency} but the account bills in USD.`, 'currency_mismatch');
      if (request.forceRefresh && request.refusedVersion === 2) return failure('connection_reauth_required', 'refresh refused', 'connection_id');
      return success({
        connectionId: 'con_1',
        channel: 'meta_ads',
        providerAccountId: '1234',
        accessToken: request.forceRefresh ? 'token-2' : 'token-1',
        tokenVersion: request.forceRefresh ? 2 : 1,
        currency: 'USD',
        timezone: 'UTC',
      });
    });
  });

  afterEach(async () => {
    await bus.close();
    await events.close();
    await reads.close();
  });

  it("answers the network's own check, under a dispatch id of its own, and records nothing", async () => {
    const network = new CheckingNetwork([{ checkedBy: 'provider', warnings: ['consider a lifetime budget'] }]);
    expect(await checks(network).validate(request('live'))).toEqual(
      success({ valid: true, channel: 'meta_ads', checked_by: 'provider', warnings: ['consider a lifetime budget'] }),
    );
    expect(network.checked).toEqual([{ accessToken: 'token-1', dispatchId: expect.stringMatching(/^dsp_[0-9A-Z]{26}$/) }]);
    expect(await events.readAll({ maxCount: 10 })).toEqual([]);
  });

  it("answers 422 provider_validation_failed with the network's message and code", async () =>
    expect(
      await checks(new CheckingNetwork([new ProviderError('validation', 'meta_ads: budget too low', '100/1885272', 400)])).validate(request('live')),
    ).toEqual({
      ok: false,
      error: { code: 'provider_validation_failed', message: 'meta_ads: budget too low', provider_code: '100/1885272' },
    }));

  it('refuses another currency than the ad account bills in before the network is asked', async () => {
    const network = new CheckingNetwork([]);
    expect(await checks(network).validate(request('live', { budget: { ...campaign.budget, currency: 'EUR' } }))).toMatchObject({
      ok: false,
      error: { code: 'provider_validation_failed', provider_code: 'currency_mismatch', param: 'campaign.budget.currency' },
    });
    expect(network.checked).toEqual([]);
  });

  it('refreshes a refused token once and checks again; refused again, connection_reauth_required', async () => {
    const network = new CheckingNetwork([new ProviderError('auth', 'expired', '190', 400), { checkedBy: 'provider', warnings: [] }]);
    expect(await checks(network).validate(request('live'))).toMatchObject({ ok: true, value: { checked_by: 'provider' } });
    expect(network.checked.map((c) => c.accessToken)).toEqual(['token-1', 'token-2']);
    const refused = new CheckingNetwork([new ProviderError('auth', 'expired', '190', 400), new ProviderError('auth', 'expired', '190', 400)]);
    expect(await checks(refused).validate(request('live'))).toMatchObject({ ok: false, error: { code: 'connection_reauth_required' } });
  });

  it('answers 502 provider_unavailable when the network does not answer', async () =>
    expect(
      await checks(new CheckingNetwork([new ProviderError('transient', 'meta_ads failed with HTTP 503', '2', 503)])).validate(request('live')),
    ).toMatchObject({
      ok: false,
      error: { code: 'provider_unavailable' },
    }));

  it('needs an active connection for the channel as a launch does', async () => {
    connection = null;
    expect(await checks(new CheckingNetwork([])).validate(request('live'))).toMatchObject({
      ok: false,
      error: { code: 'connection_required', param: 'channel' },
    });
    connection = { id: 'con_1', status: 'reauth_required' };
    expect(await checks(new CheckingNetwork([])).validate(request('live'))).toMatchObject({ ok: false, error: { code: 'connection_reauth_required' } });
    expect(accessRequests).toEqual([]);
  });

  it("checks a test key's campaign against the sandbox's rules, asking for no token", async () => {
    expect(await checks(null).validate(request('test'))).toEqual(success({ valid: true, channel: 'meta_ads', checked_by: 'sandbox', warnings: [] }));
    expect(await checks(null).validate(request('test', { name: 'No [sandbox:fail]' }))).toMatchObject({
      ok: false,
      error: { code: 'provider_validation_failed', provider_code: 'SANDBOX_VALIDATION_FAILED' },
    });
    expect(await checks(null).validate(request('test', { budget: { amount_micros: 10_000, currency: 'USD', type: 'daily' } }))).toMatchObject({
      ok: false,
      error: { code: 'provider_validation_failed', provider_code: 'budget_below_minimum' },
    });
    expect(accessRequests).toEqual([]);
  });
});
