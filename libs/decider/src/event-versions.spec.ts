import { join } from 'node:path';
import { DomainEvent } from './decider';
import { eventVersions, storedVersion } from './event-versions';
import { describeEventFixtures } from './testing';

// An aggregate made up for the test, with a real history: v2 renamed `text` to `body`, v3 added `author`.
type NoteWritten = DomainEvent<'NoteWritten', { body: string; author: string | null; writtenAt: string }>;
type NoteErased = DomainEvent<'NoteErased', { erasedAt: string }>;
type NoteEvent = NoteWritten | NoteErased;
type Note = { status: 'none' } | { status: 'written' | 'erased'; body: string; author: string | null; at: string };

const NOTE_EVENTS = eventVersions<NoteEvent>('note', {
  NoteWritten: [({ text, ...rest }) => ({ ...rest, body: text }), (v2) => ({ ...v2, author: null })],
  NoteErased: [],
});

const evolve = (state: Note, event: NoteEvent): Note => {
  if (event.type === 'NoteWritten') return { status: 'written', body: event.data.body, author: event.data.author, at: event.data.writtenAt };
  return state.status === 'none' ? state : { ...state, status: 'erased', at: event.data.erasedAt };
};
const written = NOTE_EVENTS.event('NoteWritten', { body: 'first words', author: null, writtenAt: '2026-11-20T10:00:00.000Z' });

describeEventFixtures<NoteEvent, Note>({
  versions: NOTE_EVENTS,
  dir: join(__dirname, 'fixtures/events/note'),
  evolve,
  stateBefore: (type) => (type === 'NoteWritten' ? { status: 'none' } : evolve({ status: 'none' }, written)),
  written: {
    'NoteWritten.v3': written,
    'NoteErased.v1': NOTE_EVENTS.event('NoteErased', { erasedAt: '2026-11-20T11:00:00.000Z' }),
  },
});

describe('event versions', () => {
  it('counts each type at its chain plus one, and stamps new events with it', () => {
    expect(NOTE_EVENTS.types).toEqual(['NoteWritten', 'NoteErased']);
    expect([NOTE_EVENTS.currentVersion('NoteWritten'), NOTE_EVENTS.currentVersion('NoteErased')]).toEqual([3, 1]);
    expect(written).toEqual({ type: 'NoteWritten', version: 3, data: { body: 'first words', author: null, writtenAt: '2026-11-20T10:00:00.000Z' } });
  });

  it('runs the upcasters from the stored version on, in order', () => {
    const at = '2026-11-20T10:00:00.000Z';
    expect(NOTE_EVENTS.upcast('NoteWritten', { text: 'a', writtenAt: at }, 1)).toEqual({
      type: 'NoteWritten',
      version: 3,
      data: { body: 'a', author: null, writtenAt: at },
    });
    expect(NOTE_EVENTS.upcast('NoteWritten', { body: 'b', writtenAt: at }, 2)).toEqual({
      type: 'NoteWritten',
      version: 3,
      data: { body: 'b', author: null, writtenAt: at },
    });
    expect(NOTE_EVENTS.upcast('NoteWritten', { body: 'c', author: 'ana', writtenAt: at }, 3).data).toEqual({ body: 'c', author: 'ana', writtenAt: at });
  });

  it('refuses a type it does not declare, a version newer than it knows, and a version that is no version', () => {
    expect(() => NOTE_EVENTS.upcast('NoteShredded', {}, 1)).toThrow('cannot read note event NoteShredded v1: no such event type');
    expect(() => NOTE_EVENTS.upcast('toString', {}, 1)).toThrow('cannot read note event toString v1: no such event type');
    expect(() => NOTE_EVENTS.upcast('NoteWritten', {}, 4)).toThrow('cannot read note event NoteWritten v4: this code reads up to v3');
    expect(() => NOTE_EVENTS.upcast('NoteErased', {}, 2)).toThrow('cannot read note event NoteErased v2: this code reads up to v1');
    for (const version of [0, -1, 1.5, NaN]) expect(() => NOTE_EVENTS.upcast('NoteErased', {}, version)).toThrow('a version is a whole number from 1');
  });

  it('reads the version from stored metadata: none recorded is v1, digits written as text count', () => {
    expect(storedVersion({ version: 3 })).toBe(3);
    expect(storedVersion({ version: '2' })).toBe(2);
    expect(storedVersion({})).toBe(1);
    expect(storedVersion({ version: null })).toBe(1);
    expect(storedVersion(undefined)).toBe(1);
    for (const version of [0, 1.5, 'v2', '', true, {}]) expect(() => storedVersion({ version })).toThrow(`not an event version: ${JSON.stringify(version)}`);
  });
});
