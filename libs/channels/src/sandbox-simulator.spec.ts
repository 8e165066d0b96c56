import { CampaignSpec, ProviderError } from './channel-provider.port';
import { SandboxSimulator } from './sandbox-simulator';
import { Channel } from './channel-catalog';

const campaign = (over: Partial<CampaignSpec> & { amount?: number; currency?: string } = {}): CampaignSpec => ({
  name: over.name ?? 'Spring',
  objective: 'conversion',
  budget: { amount_micros: over.amount ?? 50_000_000, currency: over.currency ?? 'USD', type: 'daily' },
  schedule: { start_at: '2026-12-01T00:00:00.000Z', timezone: 'Europe/Berlin' },
});

const simulator = new SandboxSimulator({ sleep: async () => undefined });
const create = (channel: Channel, c: CampaignSpec, attempt = 1) => simulator.createCampaign({ dispatchId: 'dsp_01TEST', channel, campaign: c, attempt });

async function refusal(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error('expected the provider to refuse');
}

describe('sandbox simulator', () => {
  it('completes with a resource id of the form sbx_<channel>_<digits>, stable for the dispatch', async () => {
    const first = await create('google_ads', campaign());
    expect(first.providerResourceId).toMatch(/^sbx_google_ads_\d+$/);
    expect((await create('google_ads', campaign(), 2)).providerResourceId).toBe(first.providerResourceId);
  });

  it('fails validation for [sandbox:fail]', async () => {
    const error = await refusal(create('meta_ads', campaign({ name: 'x [sandbox:fail]' })));
    expect(error.kind).toBe('validation');
  });

  it('answers 503 on the first call of [sandbox:transient] and succeeds on the next', async () => {
    const error = await refusal(create('meta_ads', campaign({ name: '[sandbox:transient]' })));
    expect([error.kind, error.httpStatus]).toEqual(['transient', 503]);
    await expect(create('meta_ads', campaign({ name: '[sandbox:transient]' }), 2)).resolves.toBeDefined();
  });

  it('refuses the token for [sandbox:reauth]', async () => {
    expect((await refusal(create('tiktok_ads', campaign({ name: '[sandbox:reauth]' })))).kind).toBe('auth');
  });

  it('waits before completing [sandbox:slow]', async () => {
    const waits: number[] = [];
    const slow = new SandboxSimulator({ sleep: async (ms) => void waits.push(ms) });
    await slow.createCampaign({ dispatchId: 'dsp_1', channel: 'x_ads', campaign: campaign({ name: '[sandbox:slow]' }), attempt: 1 });
    expect(waits).toEqual([3000]);
  });

  it('says that it answers at once, but for [sandbox:slow]', () => {
    const simulator = new SandboxSimulator();
    expect(simulator.answersAtOnce({ campaign: campaign({ name: 'Spring [sandbox:transient]' }) })).toBe(true);
    expect(simulator.answersAtOnce({ campaign: campaign({ name: 'Spring [sandbox:slow]' }) })).toBe(false);
  });

  it('applies minimum daily budgets in USD equivalent', async () => {
    expect((await refusal(create('tiktok_ads', campaign({ amount: 19_000_000 })))).providerCode).toBe('budget_below_minimum');
    await expect(create('tiktok_ads', campaign({ amount: 20_000_000 }))).resolves.toBeDefined();
    expect((await refusal(create('snapchat_ads', campaign({ amount: 2_000_000_000, currency: 'JPY' })))).providerCode).toBe('budget_below_minimum');
    await expect(create('snapchat_ads', campaign({ amount: 4_000_000_000, currency: 'JPY' }))).resolves.toBeDefined();
  });

  it('wants whole minor units on Meta', async () => {
    expect((await refusal(create('meta_ads', campaign({ amount: 5_000_001 })))).providerCode).toBe('budget_not_whole_minor_units');
    expect((await refusal(create('meta_ads', campaign({ amount: 150_500_000, currency: 'JPY' })))).providerCode).toBe('budget_not_whole_minor_units');
    await expect(create('meta_ads', campaign({ amount: 5_010_000 }))).resolves.toBeDefined();
  });

  it('refuses currencies the simulated ad account cannot bill in', async () => {
    expect((await refusal(create('google_ads', campaign({ currency: 'XAU' })))).providerCode).toBe('currency_unsupported');
  });
});
