import { dirname, extname, join } from 'node:path';
import { ResourceLimits, TransferListItem, Worker } from 'node:worker_threads';

export { PerTurn } from './per-turn';

/**
 * Starts the worker thread `name` that sits beside `moduleFile` (the caller's __filename): compiled
 * beside it in dist (`name.js`), or its TypeScript source under Jest (`name.ts`, run through
 * @swc-node/register, which also resolves the `@campaign-ops/*` paths there).
 */
export function startWorkerBeside(
  moduleFile: string,
  name: string,
  workerData: unknown,
  transferList?: readonly TransferListItem[],
  resourceLimits?: ResourceLimits,
): Worker {
  const extension = extname(moduleFile);
  const execArgv = extension === '.ts' ? [...process.execArgv, '-r', '@swc-node/register'] : undefined;
  return new Worker(join(dirname(moduleFile), `${name}${extension}`), {
    workerData,
    execArgv,
    transferList: transferList as TransferListItem[] | undefined,
    resourceLimits,
  });
}
