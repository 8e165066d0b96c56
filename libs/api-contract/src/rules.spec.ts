import { isUtcTimestamp } from './rules';

describe('isUtcTimestamp', () => {
  it.each(['2026-11-28T10:00:00Z', '2026-11-28T10:00Z', '2026-11-28T10:00:00.123456789Z', '2024-02-29T00:00:00Z', '0001-01-01T00:00:00Z', '0099-12-31T23:59:59Z'])('takes %s', (value) => {
    expect(isUtcTimestamp(value)).toBe(true);
  });

  it.each(['2026-02-29T00:00:00Z', '2026-02-30T09:00:00Z', '2026-11-28T24:00:00Z', '2026-11-28T10:60:00Z', '2026-11-28T10:00:60Z', '0050-02-29T00:00:00Z', '2026-11-28T10:00:00+01:00', '2026-11-28', 7])(
    'refuses %s',
    (value) => {
      expect(isUtcTimestamp(value)).toBe(false);
    },
  );
});
