import { ErrorCode, NatsError } from 'nats';

let applied = false;

/** The codes nats.js makes an error of on every request or pull, to be thrown almost never. */
const MADE_ON_EVERY_CALL: readonly string[] = [ErrorCode.Cancelled, ErrorCode.Timeout];

/**
 * nats.js makes errors nobody sees on its hot paths: it settles every request (core request/reply,
 * and so every JetStream publish) by also rejecting the promise it has just resolved with a new
 * CANCELLED error, and every pull (`consumer.fetch`) makes its TIMEOUT error up front, in case the
 * pull expires. Each is an Error whose stack trace is captured: measured in `npm run bench --
 * --nats`, 4 to 7 % of dispatch-service's and webhook-delivery-service's CPU under load. From here
 * on those two codes, without a cause, are made without capturing a stack: still a NatsError with
 * its code and message (`instanceof` holds) for the rare one someone does see, its stack the one
 * line that names it (the bus's own errors name the subject and the operation). Every other error
 * is made as nats.js makes it. Applied once per process, by the first NatsBus to connect.
 */
export function makeHotPathErrorsCheap(): void {
  if (applied) return;
  applied = true;
  const original = NatsError.errorForCode.bind(NatsError);
  const messages = new Map(MADE_ON_EVERY_CALL.map((code) => [code, original(code).message]));
  NatsError.errorForCode = (code: string, chainedError?: Error): NatsError => {
    const message = messages.get(code);
    if (message === undefined || chainedError !== undefined) return original(code, chainedError);
    // Object.create runs no constructor, so nothing captures a stack.
    return Object.assign(Object.create(NatsError.prototype) as NatsError, { name: 'NatsError', message, code, stack: `NatsError: ${message}` });
  };
}
