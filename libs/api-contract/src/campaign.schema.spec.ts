import { validate } from '@campaign-ops/request-validation';
import { createCampaignSchema } from './campaign.schema';
import { createWebhookSchema } from './webhook.schema';

const body = () => ({
  channel: 'meta_ads',
  campaign: {
    name: 'Spring',
    objective: 'conversion',
    budget: { amount_micros: 50_000_000, currency: 'USD', type: 'daily' },
    schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'Europe/Berlin' },
  },
});
type Body = ReturnType<typeof body> & Record<string, unknown>;
const check = (edit: (b: Body) => void) => {
  const b = body() as Body;
  edit(b);
  return validate(createCampaignSchema, b);
};

describe('create-campaign body', () => {
  it('accepts the body of SPEC.md', () => expect(validate(createCampaignSchema, body())).toBeNull());

  it.each<[string, (b: Body) => void, string, string]>([
    ['a missing channel', (b) => delete (b as Partial<Body>).channel, 'parameter_missing', 'channel'],
    ['an unknown channel', (b) => (b.channel = 'myspace_ads'), 'parameter_invalid', 'channel'],
    ['an unknown top-level field', (b) => (b.extra = 1), 'parameter_unknown', 'extra'],
    ['an unknown nested field', (b) => ((b.campaign.budget as Record<string, unknown>).cents = 1), 'parameter_unknown', 'campaign.budget.cents'],
    ['a missing budget', (b) => delete (b.campaign as Partial<Body['campaign']>).budget, 'parameter_missing', 'campaign.budget'],
    ['an empty name', (b) => (b.campaign.name = ''), 'parameter_invalid', 'campaign.name'],
    ['a 256-character name', (b) => (b.campaign.name = 'x'.repeat(256)), 'parameter_invalid', 'campaign.name'],
    ['an unknown objective', (b) => (b.campaign.objective = 'sales'), 'parameter_invalid', 'campaign.objective'],
    ['a zero budget', (b) => (b.campaign.budget.amount_micros = 0), 'parameter_invalid', 'campaign.budget.amount_micros'],
    ['a fractional budget', (b) => (b.campaign.budget.amount_micros = 1.5), 'parameter_invalid', 'campaign.budget.amount_micros'],
    ['an unsafe integer budget', (b) => (b.campaign.budget.amount_micros = 2 ** 53), 'parameter_invalid', 'campaign.budget.amount_micros'],
    ['a string budget', (b) => ((b.campaign.budget as Record<string, unknown>).amount_micros = '5'), 'parameter_invalid', 'campaign.budget.amount_micros'],
    ['a lowercase currency', (b) => (b.campaign.budget.currency = 'usd'), 'parameter_invalid', 'campaign.budget.currency'],
    ['a made-up currency', (b) => (b.campaign.budget.currency = 'ABC'), 'parameter_invalid', 'campaign.budget.currency'],
    ['an unknown budget type', (b) => (b.campaign.budget.type = 'weekly'), 'parameter_invalid', 'campaign.budget.type'],
    ['a local start time', (b) => (b.campaign.schedule.start_at = '2026-12-01T09:00:00+01:00'), 'parameter_invalid', 'campaign.schedule.start_at'],
    ['an impossible date', (b) => (b.campaign.schedule.start_at = '2026-02-30T09:00:00Z'), 'parameter_invalid', 'campaign.schedule.start_at'],
    ['an unknown time zone', (b) => (b.campaign.schedule.timezone = 'Mars/Olympus'), 'parameter_invalid', 'campaign.schedule.timezone'],
    ['an end before the start', (b) => ((b.campaign.schedule as Record<string, unknown>).end_at = '2026-11-30T09:00:00Z'), 'parameter_invalid', 'campaign.schedule.end_at'],
    ['a lifetime budget with no end', (b) => (b.campaign.budget.type = 'lifetime'), 'parameter_missing', 'campaign.schedule.end_at'],
  ])('refuses %s', (_, edit, code, param) => expect(check(edit)).toMatchObject({ code, param }));

  it('accepts a lifetime budget with an end, and milliseconds', () =>
    expect(
      check((b) => {
        b.campaign.budget.type = 'lifetime';
        b.campaign.schedule.start_at = '2026-12-01T09:00:00.000Z';
        (b.campaign.schedule as Record<string, unknown>).end_at = '2026-12-31T09:00:00Z';
      }),
    ).toBeNull());

  it('says which currency rule was broken, in words', () =>
    expect(check((b) => (b.campaign.budget.currency = 'usd'))?.message).toBe('campaign.budget.currency must be a three-letter uppercase ISO 4217 code'));
});

describe('create-webhook body', () => {
  it('refuses an unknown event with event_unknown', () =>
    expect(validate(createWebhookSchema, { url: 'https://x.example', events: ['dispatch.done'] })).toMatchObject({ code: 'event_unknown', param: 'events.0' }));
  it('refuses an empty event list', () =>
    expect(validate(createWebhookSchema, { url: 'https://x.example', events: [] })).toMatchObject({ code: 'parameter_invalid', param: 'events' }));
});
