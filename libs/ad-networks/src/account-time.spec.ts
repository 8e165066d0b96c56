import { isIanaTimeZone, isoWithOffset, localDateTime, zonedTime } from './account-time';

describe('account time', () => {
  it('writes an instant in the account zone, across daylight saving', () => {
    expect(localDateTime('2027-01-04T09:00:00Z', 'America/New_York')).toBe('2027-01-04 04:00:00');
    expect(localDateTime('2027-07-04T09:00:00Z', 'America/New_York')).toBe('2027-07-04 05:00:00');
    expect(localDateTime('2027-01-04T20:30:15Z', 'Asia/Tokyo')).toBe('2027-01-05 05:30:15');
    expect(localDateTime('2027-01-04T00:00:00Z', 'UTC')).toBe('2027-01-04 00:00:00');
  });

  it('gives the offset at that instant', () => {
    expect(isoWithOffset('2027-01-04T09:00:00Z', 'America/New_York')).toBe('2027-01-04T04:00:00-05:00');
    expect(isoWithOffset('2027-01-04T09:00:00Z', 'Asia/Kolkata')).toBe('2027-01-04T14:30:00+05:30');
    expect(isoWithOffset('2027-01-04T09:00:00Z', 'UTC')).toBe('2027-01-04T09:00:00+00:00');
    expect(zonedTime('2027-01-04T09:00:00Z', 'Asia/Kathmandu').offsetMinutes).toBe(345);
  });

  it('drops milliseconds rather than rounding into the next second', () => {
    expect(localDateTime('2027-01-04T09:00:59.999Z', 'UTC')).toBe('2027-01-04 09:00:59');
  });

  it('knows IANA names from anything else', () => {
    expect(isIanaTimeZone('Etc/GMT+8')).toBe(true);
    expect(isIanaTimeZone('EasternTimeUSCanada')).toBe(false);
    expect(() => zonedTime('not a date', 'UTC')).toThrow(RangeError);
  });
});
