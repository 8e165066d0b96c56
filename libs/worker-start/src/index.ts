import { writeFileSync } from 'node:fs';
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

/** Linux keeps at most 15 characters of a thread's name. */
export const THREAD_NAME_MAX = 15;

/**
 * Names the calling thread for the operating system (Linux: /proc/thread-self/comm), so that
 * `top -H`, `ps -T` and the bench's table by thread tell a worker thread from V8's and libuv's,
 * which all share the process's name. Best-effort: elsewhere, or where /proc is read-only, the
 * thread keeps the name it had. Called first thing by each worker thread of the service.
 */
export function nameThread(name: string): void {
  if (!/^[a-z][a-z0-9-]*$/.test(name) || name.length > THREAD_NAME_MAX) throw new RangeError(`not a thread name: ${name}`);
  try {
    writeFileSync('/proc/thread-self/comm', name);
  } catch {
    // Not Linux, or no writable /proc: the name only helps whoever looks at the threads.
  }
}
