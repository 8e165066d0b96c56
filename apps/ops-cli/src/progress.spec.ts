import { Writable } from 'node:stream';
import { progressOn } from './progress';

/** A stream that keeps what is written to it, as a terminal (isTTY, columns) or as a pipe. */
function captured(tty: boolean): { stream: NodeJS.WriteStream; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  }) as unknown as NodeJS.WriteStream & { isTTY?: boolean; columns?: number; cursorTo?: unknown; clearLine?: unknown; moveCursor?: unknown };
  if (tty) {
    Object.assign(stream, {
      isTTY: true,
      columns: 160,
      rows: 40,
      cursorTo: (_x: number, _y?: number, callback?: () => void) => (callback?.(), true),
      clearLine: (_dir: number, callback?: () => void) => (callback?.(), true),
      clearScreenDown: (callback?: () => void) => (callback?.(), true),
      moveCursor: (_dx: number, _dy: number, callback?: () => void) => (callback?.(), true),
    });
  }
  return { stream, text: () => chunks.join('') };
}

describe('progress of a long ops command', () => {
  afterEach(() => jest.useRealTimers());

  it('draws a bar with the count, the rate and the time left on a terminal', () => {
    jest.useFakeTimers({ now: 0 });
    const { stream, text } = captured(true);
    const progress = progressOn(stream, 'export');
    jest.setSystemTime(2_000);
    progress.update(50_000, 0.25);
    jest.setSystemTime(4_000);
    progress.update(100_000, 0.5);
    progress.stop();

    const drawn = text();
    expect(drawn).toContain('export |');
    expect(drawn).toContain('█');
    expect(drawn).toContain('░');
    expect(drawn).toMatch(/50% \| 100000 events \| 25000 events\/s \| ETA \d+s/);
  });

  it('writes plain lines with the rate and the time left elsewhere, about once a second and at the end', () => {
    jest.useFakeTimers({ now: 0 });
    const { stream, text } = captured(false);
    const progress = progressOn(stream, 'rebuild');
    jest.setSystemTime(1_000);
    progress.update(10_000, 0.1);
    jest.setSystemTime(1_500);
    progress.update(15_000, 0.15); // within the second: not written
    jest.setSystemTime(2_000);
    progress.update(20_000, 0.2);
    jest.setSystemTime(10_000);
    progress.update(100_000, 1);
    progress.stop();

    expect(text().split('\n').filter(Boolean)).toEqual([
      'rebuild: 10% 10000 events 10000 events/s ETA 9s',
      'rebuild: 20% 20000 events 10000 events/s ETA 8s',
      'rebuild: 100% 100000 events 10000 events/s',
    ]);
    expect(text()).not.toContain('\u001b');
  });
});
