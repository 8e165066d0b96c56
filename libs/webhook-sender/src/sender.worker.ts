import { parentPort, workerData } from 'node:worker_threads';
import { nameThread, PerTurn } from '@campaign-ops/worker-start';
import type { ConnectionLimits } from './partner-connections';
import { WebhookSender } from './post-webhook';
import type { SenderThreadMessage, SenderThreadReply } from './sender-thread';

// The thread of WebhookSenderThread: one WebhookSender (its keep-alive pools live here), the posts
// of a turn of the caller's loop in, the answers of a turn of this one out. `close` waits for the
// requests under way, then ends the thread.
nameThread('webhook-sender');
const sender = new WebhookSender(workerData as Partial<ConnectionLimits>);
const port = parentPort!;
const replies = new PerTurn<SenderThreadReply[number]>((answers) => port.postMessage(answers satisfies SenderThreadReply));
const reply = (answer: SenderThreadReply[number]) => replies.add(answer);
port.on('message', (message: SenderThreadMessage) => {
  if (message.kind === 'close') {
    void sender.close().finally(() => setImmediate(() => port.close()));
    return;
  }
  for (const { id, request } of message.posts) {
    sender.post(request).then(
      (result) => reply({ id, result }),
      (error: Error) => reply({ id, error: error.message }),
    );
  }
});
