/** The spec's worker: answers its workerData, and an import through the project's paths. */
import { parentPort, workerData } from 'node:worker_threads';
import { BUSY_TIMEOUT_MS } from '@campaign-ops/sqlite-wal';

parentPort!.postMessage({ workerData, busyTimeoutMs: BUSY_TIMEOUT_MS });
