import { parentPort, workerData } from 'node:worker_threads';
import type { ConnectionLimits } from './partner-connections';
import { WebhookSender } from './post-webhook';
import type { SenderThreadMessage } from './sender-thread';

// The thread of WebhookSenderThread: one WebhookSender (its keep-alive pools live here), a request
// in, its result out. `close` waits for the requests under way, then ends the thread.
const sender = new WebhookSender(workerData as Partial<ConnectionLimits>);
const port = parentPort!;
port.on('message', (message: SenderThreadMessage) => {
  if (message.kind === 'close') {
    void sender.close().finally(() => port.close());
    return;
  }
  sender.post(message.request).then(
    (result) => port.postMessage({ id: message.id, result }),
    (error: Error) => port.postMessage({ id: message.id, error: error.message }),
  );
});
