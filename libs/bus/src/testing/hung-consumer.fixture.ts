/**
 * Child process for in-process-bus.spec.ts: a standalone process whose handler hangs on a message
 * until the test SIGKILLs it. Args: <sqlite file> <durable> <subject> <ackWaitMs>.
 */
import { InProcessBus } from '../in-process-bus';

const [file, durable, subject, ackWaitMs] = process.argv.slice(2);
const bus = InProcessBus.open({ file });
// A handler waiting forever holds no timer; this one keeps the process alive until it is killed.
setInterval(() => undefined, 60_000);
void bus.consume({ durable, subject, ackWaitMs: Number(ackWaitMs) }, async (message) => {
  process.stdout.write(`handling ${JSON.stringify(message.data)}\n`);
  await new Promise<never>(() => undefined);
});
