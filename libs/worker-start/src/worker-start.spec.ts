import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { nameThread, startWorkerBeside } from './index';

/** A caller in testing/, where the fixture worker is (testing/ is not compiled into dist). */
const CALLER = join(__dirname, 'testing', 'caller.ts');

describe('startWorkerBeside', () => {
  it('given TypeScript beside the caller (as under Jest), starts it with its workerData and the project paths resolved', async () => {
    const worker = startWorkerBeside(CALLER, 'echo.worker', { n: 1 });
    try {
      const [answer] = await once(worker, 'message');
      expect(answer).toEqual({ workerData: { n: 1 }, busyTimeoutMs: 5_000 });
    } finally {
      await worker.terminate();
    }
  });

  it('gives the thread the resource limits asked for', async () => {
    const worker = startWorkerBeside(CALLER, 'echo.worker', null, undefined, { maxYoungGenerationSizeMb: 4 });
    try {
      await once(worker, 'message');
      expect(worker.resourceLimits).toMatchObject({ maxYoungGenerationSizeMb: 4 });
    } finally {
      await worker.terminate();
    }
  });

  it('given a missing worker, fails with its path', async () => {
    const worker = startWorkerBeside(CALLER, 'no-such.worker', null);
    const [error] = await once(worker, 'error');
    expect(String(error)).toContain('no-such.worker.ts');
  });
});

describe('nameThread', () => {
  const linux = existsSync('/proc/thread-self/comm');

  (linux ? it.each : it.skip.each)([['webhook-sender'], ['fifteen-letters']])(
    'given a worker that names itself %p, the process lists that thread by the name, and its own thread keeps its name',
    async (name) => {
      const mainName = readFileSync('/proc/thread-self/comm', 'utf8');
      const worker = startWorkerBeside(CALLER, 'named.worker', name);
      try {
        const [tid] = await once(worker, 'message');
        expect(readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim()).toBe(name);
        expect(readFileSync('/proc/thread-self/comm', 'utf8')).toBe(mainName);
      } finally {
        await worker.terminate();
      }
    },
  );

  it.each([['a-name-past-fifteen'], ['Upper'], ['with space'], [''], ['-leading']])('refuses %p, which Linux would cut or ps would show badly', (name) =>
    expect(() => nameThread(name)).toThrow(RangeError),
  );
});
