import { CURRENCY_CODES, isTimeZone, isUtcTimestamp, UTC_TIMESTAMP_PATTERN } from './rules';
import { TIME_ZONES } from './time-zones';

describe('isUtcTimestamp', () => {
  it.each([
    '2026-11-28T10:00:00Z',
    '2026-11-28T10:00:00.123456789Z',
    '2024-02-29T00:00:00Z',
    '0000-02-29T00:00:00Z',
    '0001-01-01T00:00:00Z',
    '0099-12-31T23:59:59Z',
  ])('takes %s', (value) => {
    expect(isUtcTimestamp(value)).toBe(true);
    expect(new RegExp(UTC_TIMESTAMP_PATTERN).test(value)).toBe(true);
  });

  it.each([
    '2026-11-28T10:00Z',
    '2026-11-28t10:00:00z',
    '2026-11-28 10:00:00Z',
    '2026-11-28T10:00:00.1234567890Z',
    '2026-02-29T00:00:00Z',
    '2026-02-30T09:00:00Z',
    '2026-11-28T24:00:00Z',
    '2026-11-28T10:60:00Z',
    '2026-11-28T23:59:60Z',
    '0050-02-29T00:00:00Z',
    '2026-11-28T10:00:00+01:00',
    '2026-11-28',
    7,
  ])('refuses %s', (value) => {
    expect(isUtcTimestamp(value)).toBe(false);
  });
});

describe('isTimeZone', () => {
  it.each(['UTC', 'Europe/Berlin', 'Asia/Kolkata', 'Asia/Calcutta', 'Europe/Kyiv', 'US/Eastern', 'Etc/GMT+5', 'America/Argentina/Buenos_Aires'])(
    'takes %s (a name of the tz database)',
    (value) => {
      expect(isTimeZone(value)).toBe(true);
    },
  );

  it.each(['europe/berlin', 'Mars/Olympus', 'Factory', '', ' UTC', 'UTC ', 42])('refuses %s', (value) => {
    expect(isTimeZone(value)).toBe(false);
  });

  it('lists only names this runtime knows, each once, sorted', () => {
    expect(TIME_ZONES.length).toBeGreaterThan(500);
    expect(new Set(TIME_ZONES).size).toBe(TIME_ZONES.length);
    expect([...TIME_ZONES].sort()).toEqual(TIME_ZONES);
    for (const name of TIME_ZONES) expect(() => new Intl.DateTimeFormat('en-US', { timeZone: name })).not.toThrow();
  });
});

describe('CURRENCY_CODES', () => {
  it('are the ISO 4217 codes, three upper-case letters each', () => {
    expect(CURRENCY_CODES).toEqual(expect.arrayContaining(['USD', 'EUR', 'JPY']));
    expect(CURRENCY_CODES.every((code) => /^[A-Z]{3}$/.test(code))).toBe(true);
    expect(CURRENCY_CODES).not.toContain('ABC');
  });
});
