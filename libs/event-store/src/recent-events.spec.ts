import { RecentEvents } from './recent-events';
import type { EventRow } from './sqlite-event-rows';

const row = (position: number): EventRow => ({
  position,
  event_id: `evt-${position}`,
  stream_id: 'dispatch-1',
  revision: position,
  type: 'Happened',
  data: '{}',
  metadata: '{"version":1}',
  occurred_at: '2026-01-01T00:00:00.000Z',
});
const rows = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => row(from + i));
const positions = (held: EventRow[] | null) => held?.map((r) => r.position) ?? null;

describe('RecentEvents', () => {
  it('given appends that join up, answers any stretch it holds entirely, and nothing else', () => {
    const recent = new RecentEvents(100);
    recent.add(rows(5, 6));
    recent.add(rows(7, 9));
    expect(positions(recent.between(4, 9))).toEqual([5, 6, 7, 8, 9]);
    expect(positions(recent.between(6, 8))).toEqual([7, 8]);
    expect(recent.between(3, 9)).toBeNull(); // position 4 was never held
    expect(recent.between(6, 10)).toBeNull(); // nor 10 yet
    expect(recent.between(9, 9)).toBeNull();
  });

  it('given a gap (another process appended in between), starts over from the append after it', () => {
    const recent = new RecentEvents(100);
    recent.add(rows(1, 3));
    recent.add(rows(5, 6));
    expect(recent.between(0, 3)).toBeNull();
    expect(positions(recent.between(4, 6))).toEqual([5, 6]);
    expect(recent.between(3, 6)).toBeNull();
  });

  it('holds nothing of an append whose own positions do not join up', () => {
    const recent = new RecentEvents(100);
    recent.add(rows(1, 2));
    recent.add([row(3), row(5)]);
    expect(recent.between(0, 2)).toBeNull();
    expect(recent.between(2, 3)).toBeNull();
  });

  it('keeps at least its capacity of the latest, dropping the oldest', () => {
    const recent = new RecentEvents(3);
    for (let position = 1; position <= 10; position++) recent.add([row(position)]);
    expect(positions(recent.between(7, 10))).toEqual([8, 9, 10]);
    expect(recent.between(0, 10)).toBeNull();
    expect(() => new RecentEvents(0)).toThrow('capacity');
  });
});
