import { RecordedEvent } from '@campaign-ops/event-store';

/** Which events an export holds; the fields given must all hold. */
export interface ExportFilter {
  /** One stream, e.g. `dispatch-dsp_…`. */
  stream?: string;
  /** Streams named `<category>-…`, e.g. `dispatch`. */
  category?: string;
  /** Events whose metadata.accountId is this account, and the account's own stream. */
  account?: string;
  /** recorded_at at or after this instant (ISO 8601). */
  from?: string;
  /** recorded_at before this instant (ISO 8601). */
  to?: string;
}

export function normalizeFilter(filter: ExportFilter): ExportFilter {
  const instant = (value: string | undefined, name: string) => {
    if (value === undefined) return undefined;
    const time = Date.parse(value);
    if (Number.isNaN(time)) throw new Error(`--${name} is not an ISO 8601 time: ${value}`);
    return new Date(time).toISOString();
  };
  if (filter.category !== undefined && !/^[a-z][a-z0-9_]*$/.test(filter.category))
    throw new Error(`--category is a stream category such as dispatch, not ${filter.category}`);
  const normalized: ExportFilter = { ...filter, from: instant(filter.from, 'from'), to: instant(filter.to, 'to') };
  return Object.fromEntries(Object.entries(normalized).filter(([, value]) => value !== undefined));
}

/** Whether the filter keeps an event (given its metadata, which a canonical event holds as text). */
export function selector(filter: ExportFilter): (event: Pick<RecordedEvent, 'streamId' | 'occurredAt'>, metadata: Record<string, unknown>) => boolean {
  const { account, from, to } = filter;
  const accountStream = account === undefined ? undefined : `account-${account}`;
  return (event, metadata) =>
    (account === undefined || metadata['accountId'] === account || event.streamId === accountStream) &&
    (from === undefined || event.occurredAt >= from) &&
    (to === undefined || event.occurredAt < to);
}

export const prefixesOf = (filter: ExportFilter) => (filter.category === undefined ? undefined : [`${filter.category}-`]);
