import { once } from 'node:events';
import { join } from 'node:path';
import { startWorkerBeside } from './index';

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
