/** The spec's named worker: names itself as its workerData says, answers its thread id (Linux), and waits to be ended. */
import { readlinkSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { nameThread } from '../index';

nameThread(workerData as string);
parentPort!.postMessage(Number(readlinkSync('/proc/thread-self').split('/').pop()));
setInterval(() => undefined, 60_000);
