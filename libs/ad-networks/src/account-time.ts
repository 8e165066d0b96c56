/**
 * Instants written in an ad account's time zone, for networks that want local dates and times
 * (Google's `startDateTime`, offsets on Meta, Snapchat and X). Intl does the zone arithmetic, so
 * daylight-saving changes are the tz database's, not ours.
 */
export interface ZonedTime {
  date: string; // yyyy-MM-dd
  time: string; // HH:mm:ss
  /** Minutes east of UTC at that instant. */
  offsetMinutes: number;
}

export function isIanaTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    return false;
  }
}

export function zonedTime(instant: string | Date, timeZone: string): ZonedTime {
  const at = typeof instant === 'string' ? new Date(instant) : instant;
  if (Number.isNaN(at.getTime())) throw new RangeError(`not an instant: ${String(instant)}`);
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(at)
      .map((part) => [part.type, part.value]),
  );
  const wholeSeconds = Math.floor(at.getTime() / 1000) * 1000;
  const asUtc = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  return {
    date: `${parts.year.padStart(4, '0')}-${parts.month}-${parts.day}`,
    time: `${parts.hour}:${parts.minute}:${parts.second}`,
    offsetMinutes: Math.round((asUtc - wholeSeconds) / 60_000),
  };
}

/** `yyyy-MM-dd HH:mm:ss` in the zone (Google Ads' `startDateTime`). */
export function localDateTime(instant: string | Date, timeZone: string): string {
  const zoned = zonedTime(instant, timeZone);
  return `${zoned.date} ${zoned.time}`;
}

/** ISO 8601 with the zone's offset at that instant: `2027-01-04T09:00:00+09:00`. */
export function isoWithOffset(instant: string | Date, timeZone: string): string {
  const zoned = zonedTime(instant, timeZone);
  const sign = zoned.offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(zoned.offsetMinutes);
  const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${zoned.date}T${zoned.time}${offset}`;
}
