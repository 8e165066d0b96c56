import { BUDGET_TYPES, CHANNELS, OBJECTIVES } from '@campaign-ops/channels';
import { s } from '@campaign-ops/request-validation';

const ISO_CURRENCIES = new Set(Intl.supportedValuesOf('currency'));
const UTC_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?Z$/;

/** ISO 8601 in UTC, ending in `Z`, and a real instant (no 31 February, no hour 25). */
export function checkUtcTimestamp(value: string): string | null {
  const m = UTC_TIMESTAMP.exec(value);
  if (!m) return 'must be an ISO 8601 UTC timestamp ending in Z, such as 2026-12-01T09:00:00Z';
  const [y, mo, d, h, mi, sec] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '0'].map(Number);
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, sec));
  const real = date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d && h < 24 && mi < 60 && sec < 60;
  return real ? null : 'is not a real date and time';
}

const TIME_ZONE_EXPECTED = 'must be an IANA time zone name, such as Europe/Berlin';
/** Answers remembered: building a DateTimeFormat per request was a measurable share of a launch. */
const knownTimeZones = new Map<string, boolean>();

export function checkTimeZone(value: string): string | null {
  let valid = knownTimeZones.get(value);
  if (valid === undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: value });
      valid = /^[A-Za-z]/.test(value);
    } catch {
      valid = false;
    }
    // Only valid names are remembered (there are a few hundred): a flood of made-up ones costs nothing.
    if (valid) knownTimeZones.set(value, true);
  }
  return valid ? null : TIME_ZONE_EXPECTED;
}

export const campaignSchema = s.object(
  {
    name: s.string({ minLength: 1, maxLength: 255, description: 'Campaign name. Sandbox magic names: `[sandbox:fail]`, `[sandbox:transient]`, `[sandbox:reauth]`, `[sandbox:slow]`.', example: 'Spring sale' }),
    objective: s.string({ enum: OBJECTIVES, example: 'conversion' }),
    budget: s.object(
      {
        amount_micros: s.integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Amount in millionths of the currency unit.', example: 50_000_000 }),
        currency: s.string({
          pattern: /^[A-Z]{3}$/,
          expected: 'a three-letter uppercase ISO 4217 code',
          example: 'USD',
          check: (v) => (ISO_CURRENCIES.has(v) ? null : 'must be a three-letter uppercase ISO 4217 code'),
        }),
        type: s.string({ enum: BUDGET_TYPES, example: 'daily' }),
      },
      { required: ['amount_micros', 'currency', 'type'] },
    ),
    schedule: s.object(
      {
        start_at: s.string({ format: 'date-time', check: checkUtcTimestamp, example: '2026-12-01T09:00:00Z' }),
        timezone: s.string({ maxLength: 64, check: checkTimeZone, description: 'IANA time zone name.', example: 'Europe/Berlin' }),
        end_at: s.string({ format: 'date-time', check: checkUtcTimestamp, description: 'After start_at; required with a lifetime budget.' }),
      },
      {
        required: ['start_at', 'timezone'],
        refine: (v, path) =>
          typeof v.end_at === 'string' && Date.parse(v.end_at) <= Date.parse(v.start_at as string)
            ? { code: 'parameter_invalid', param: `${path}.end_at`, message: `${path}.end_at must be after ${path}.start_at` }
            : null,
      },
    ),
  },
  {
    required: ['name', 'objective', 'budget', 'schedule'],
    refine: (v, path) => {
      const budget = v.budget as { type: string };
      const schedule = v.schedule as { end_at?: string };
      return budget.type === 'lifetime' && schedule.end_at === undefined
        ? { code: 'parameter_missing', param: `${path}.schedule.end_at`, message: `${path}.schedule.end_at is required with a lifetime budget` }
        : null;
    },
  },
);

export const createCampaignSchema = s.object(
  {
    channel: s.string({ enum: CHANNELS, example: 'meta_ads' }),
    campaign: campaignSchema,
  },
  { required: ['channel', 'campaign'] },
);
