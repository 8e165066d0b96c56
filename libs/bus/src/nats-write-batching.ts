// nats.js's ProtocolHandler is not part of its typed API: reached by path, checked where it is patched.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import protocolModule = require('nats/lib/nats-base-client/protocol');

let applied = false;

/** What of nats.js's ProtocolHandler (nats 2.29) the patch relies on. */
interface Outbound {
  outbound: { length(): number; size(): number; fill(buf: Uint8Array, ...payloads: Uint8Array[]): void };
  pendingLimit: number;
  flushPending(): void;
}

const textEncoder = new TextEncoder();

/**
 * nats.js writes what a connection has to send (publishes, acks, pull requests, replies) to its
 * socket at the end of the microtask that queued the first of them: under load a process that
 * settles messages from many promise chains in one turn of the event loop makes one socket write
 * (one syscall, `writeBuffer`) per chain. Measured in `npm run bench -- --nats`, those writes were
 * the largest single function of dispatch-service, webhook-delivery-service and the gateway. From
 * here on the first command queued schedules the write for the end of the turn (setImmediate):
 * everything the turn queued goes out in one write, a few microseconds later. What nats.js flushes
 * at once (a buffer past its pending limit, a PING, a flush()) still goes at once. Applied once per
 * process, by the first NatsBus to connect.
 */
export function batchSocketWritesPerTurn(): void {
  if (applied) return;
  const { ProtocolHandler } = protocolModule as unknown as { ProtocolHandler?: { prototype: Record<string, unknown> } };
  const prototype = ProtocolHandler?.prototype;
  if (typeof prototype?.sendCommand !== 'function' || typeof prototype.flushPending !== 'function')
    throw new Error('nats.js has no ProtocolHandler.sendCommand/flushPending: the write batching (nats-write-batching.ts) needs updating for this version');
  applied = true;
  prototype.sendCommand = function sendCommand(this: Outbound, cmd: string | Uint8Array, ...payloads: Uint8Array[]): void {
    const queuedBefore = this.outbound.length();
    this.outbound.fill(typeof cmd === 'string' ? textEncoder.encode(cmd) : cmd, ...payloads);
    if (queuedBefore === 0) setImmediate(() => this.flushPending());
    else if (this.outbound.size() >= this.pendingLimit) this.flushPending();
  };
}
