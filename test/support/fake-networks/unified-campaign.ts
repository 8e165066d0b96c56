import { CampaignSpec } from '@campaign-ops/channels';

/** A unified campaign (docs/api.md#dispatches-and-retries) for the adapters' specs: USD 12.34 a day from 2027-01-04 09:00 UTC. */
export function unifiedCampaign(
  overrides: { name?: string; objective?: string; budget?: Partial<CampaignSpec['budget']>; schedule?: Partial<CampaignSpec['schedule']> } = {},
): CampaignSpec {
  return {
    name: overrides.name ?? `Spring sale ${Math.random().toString(36).slice(2, 8)}`,
    objective: overrides.objective ?? 'conversion',
    budget: { amount_micros: 12_340_000, currency: 'USD', type: 'daily', ...overrides.budget },
    schedule: { start_at: '2027-01-04T09:00:00Z', timezone: 'UTC', ...overrides.schedule },
  };
}
