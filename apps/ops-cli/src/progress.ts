import { SingleBar } from 'cli-progress';

/** How a long command reports how far it is: `update(done, fraction)` as it goes, `stop()` at the end. */
export interface Progress {
  update(done: number, fraction: number): void;
  stop(): void;
}

const PLAIN_EVERY_MS = 1_000;

/**
 * On a terminal, a bar with the rate and the time left (cli-progress); otherwise (a pipe, a log
 * file, CI) a plain line on stderr about once a second and at the end. stdout stays for the result.
 */
export function progressOn(stream: NodeJS.WriteStream, what: string, unit = 'events'): Progress {
  const started = Date.now();
  const rate = (done: number) => Math.round(done / Math.max(0.001, (Date.now() - started) / 1000));
  if (stream.isTTY) {
    const bar = new SingleBar({
      stream,
      format: `${what} |{bar}| {percentage}% | {done} ${unit} | {rate} ${unit}/s | ETA {eta_formatted}`,
      barCompleteChar: '█',
      barIncompleteChar: '░',
      hideCursor: true,
      etaBuffer: 50,
    });
    bar.start(1000, 0, { done: 0, rate: 0 });
    return {
      update: (done, fraction) => bar.update(Math.round(fraction * 1000), { done, rate: rate(done) }),
      stop: () => bar.stop(),
    };
  }
  let last = 0;
  let lastDone = 0;
  const line = (done: number, fraction: number) => {
    const elapsed = (Date.now() - started) / 1000;
    const eta = fraction > 0 && fraction < 1 ? ` ETA ${Math.ceil((elapsed / fraction) * (1 - fraction))}s` : '';
    stream.write(`${what}: ${Math.floor(fraction * 100)}% ${done} ${unit} ${rate(done)} ${unit}/s${eta}\n`);
  };
  let lastFraction = 0;
  let finished = false;
  return {
    update: (done, fraction) => {
      lastDone = done;
      lastFraction = fraction;
      if (Date.now() - last < PLAIN_EVERY_MS && fraction < 1) return;
      if (finished) return;
      last = Date.now();
      finished = fraction >= 1;
      line(done, fraction);
    },
    stop: () => {
      if (!finished) line(lastDone, Math.max(lastFraction, 1));
      finished = true;
    },
  };
}
