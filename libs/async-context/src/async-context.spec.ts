import { setTimeout as sleep } from 'node:timers/promises';
import { ContextKey } from './index';

describe('ContextKey', () => {
  const request = new ContextKey<string>('request');
  const delivering = new ContextKey<object>('delivering');

  it('given a run, carries its value through awaits, timers and callbacks, and none outside it', async () => {
    const seen: Array<string | undefined> = [];
    await request.run('req_1', async () => {
      seen.push(request.get());
      await sleep(1);
      seen.push(request.get());
      await new Promise<void>((resolve) =>
        setTimeout(() => {
          seen.push(request.get());
          resolve();
        }, 1),
      );
      await new Promise<void>((resolve) =>
        setImmediate(() => {
          seen.push(request.get());
          resolve();
        }),
      );
    });
    expect(seen).toEqual(['req_1', 'req_1', 'req_1', 'req_1']);
    expect(request.get()).toBeUndefined();
  });

  it('given runs of two keys inside each other, each answers its own, and the nearest run of a key wins', async () => {
    const subscription = {};
    const answers = await delivering.run(subscription, () =>
      request.run('req_outer', async () => {
        await sleep(1);
        const outer = [request.get(), delivering.get()];
        const inner = await request.run('req_inner', async () => {
          await sleep(1);
          return [request.get(), delivering.get()];
        });
        return { outer, inner, after: [request.get(), delivering.get()] };
      }),
    );
    expect(answers).toEqual({ outer: ['req_outer', subscription], inner: ['req_inner', subscription], after: ['req_outer', subscription] });
  });

  it('given concurrent runs, keeps them apart', async () => {
    const one = async (id: string) =>
      request.run(id, async () => {
        await sleep(Math.random() * 5);
        return request.get();
      });
    expect(await Promise.all(['a', 'b', 'c', 'd'].map(one))).toEqual(['a', 'b', 'c', 'd']);
  });

  it('answers what the run answers, thrown errors included, and leaves the caller as it was', () => {
    expect(request.run('x', () => 42)).toBe(42);
    expect(() =>
      delivering.run({}, () => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(delivering.get()).toBeUndefined();
  });
});
