/**
 * The marker of its dispatch that every campaign this service creates carries, so that a try
 * whose outcome was lost (a timeout, a dropped connection, a 5xx after the network created it, a
 * crash before the outcome was recorded) can find the campaign again instead of creating another
 * (docs/api.md#dispatches-and-retries, "At most one campaign per dispatch"; CHANNELS.md, "Finding a campaign again").
 *
 * Where a network has no field made for the caller's own reference that can be searched, the
 * marker is a suffix of the campaign's name: `Spring sale · dsp_01JD…`. Partners see it in the
 * network's interface; docs/going-live.md says so.
 */
export const MARKER_SEPARATOR = ' · ';

/** The campaign name with the dispatch's marker, the partner's part shortened (never the marker) to fit `maxLength` characters. */
export function markedName(name: string, dispatchId: string, maxLength: number): string {
  const suffix = `${MARKER_SEPARATOR}${dispatchId}`;
  const room = Math.max(0, maxLength - suffix.length);
  const chars = Array.from(name);
  const kept = chars.length > room ? chars.slice(0, room).join('').trimEnd() : name;
  return `${kept}${suffix}`;
}

/** Whether a campaign name carries this dispatch's marker (and not merely a longer id that starts with it). */
export function carriesMarker(name: unknown, dispatchId: string): boolean {
  return typeof name === 'string' && name.endsWith(`${MARKER_SEPARATOR}${dispatchId}`);
}

/** Network ids in the order they were handed out: shorter first, then in code-unit order (digits, or base 36, that grow). */
export const byIdOrder = (a: string, b: string): number => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

/**
 * The campaigns a lookup found, oldest first: by the network's creation time where it gives one
 * (one without comes last), then by id, so that every lookup puts the same one first.
 */
export function oldestFirst<T extends { providerResourceId: string; createdAt?: string | null }>(found: readonly T[]): T[] {
  const at = (campaign: T) => Date.parse(campaign.createdAt ?? '') || Number.MAX_SAFE_INTEGER;
  return [...found].sort((a, b) => at(a) - at(b) || byIdOrder(a.providerResourceId, b.providerResourceId));
}
