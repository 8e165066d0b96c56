import { DomainEvent, eventVersions } from '@campaign-ops/decider';
import { RecordedEvent } from '@campaign-ops/event-store';
import { toDomainEvent, toStoredEvent } from './aggregate-repository';

type Renamed = DomainEvent<'Renamed', { name: string }>;
const RENAMED = eventVersions<Renamed>('sample', { Renamed: [({ title }) => ({ name: title })] });
const recorded = (data: Record<string, unknown>, metadata: Record<string, unknown>): RecordedEvent => ({
  id: '01a210f0-0000-0000-0000-000000000001',
  streamId: 'sample-1',
  type: 'Renamed',
  revision: 0,
  position: '1',
  data,
  metadata,
  occurredAt: '2026-11-25T04:20:00.000Z',
});

describe('events between the store and the domain', () => {
  it('writes the version beside the metadata and reads it back unchanged', () => {
    const stored = toStoredEvent(RENAMED.event('Renamed', { name: 'n' }), { accountId: 'acct_1' });
    expect(stored.metadata).toEqual({ accountId: 'acct_1', version: 2 });
    expect(toDomainEvent(recorded(stored.data, stored.metadata!), RENAMED.upcast)).toEqual({ type: 'Renamed', version: 2, data: { name: 'n' } });
  });

  it('upcasts an older version as stored, and takes an event stored without a version for v1', () => {
    expect(toDomainEvent(recorded({ title: 't' }, { version: 1 }), RENAMED.upcast)).toEqual({ type: 'Renamed', version: 2, data: { name: 't' } });
    expect(toDomainEvent(recorded({ title: 't' }, {}), RENAMED.upcast)).toEqual({ type: 'Renamed', version: 2, data: { name: 't' } });
  });

  it('refuses a version newer than the code, naming the event', () =>
    expect(() => toDomainEvent(recorded({ name: 'n' }, { version: 3 }), RENAMED.upcast)).toThrow('cannot read sample event Renamed v3: this code reads up to v2'));
});
