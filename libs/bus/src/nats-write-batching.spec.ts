import { connect, NatsConnection } from 'nats';
import { batchSocketWritesPerTurn } from './nats-write-batching';
import { NatsServerHandle, startNatsServer } from './testing/nats-server';

/** The socket writes of a connection (nats.js's transport), counted from here on. */
function countWrites(nc: NatsConnection): { count: () => number } {
  const transport = (nc as unknown as { protocol: { transport: { send(frame: Uint8Array): void } } }).protocol.transport;
  const send = transport.send.bind(transport);
  let writes = 0;
  transport.send = (frame) => {
    writes++;
    send(frame);
  };
  return { count: () => writes };
}

/** Ten publishes in one turn of the event loop, each at the end of a promise chain of its own (as ten handlings settling). */
async function tenPublishesInOneTurn(nc: NatsConnection): Promise<void> {
  await Promise.all(
    Array.from({ length: 10 }, async (_, i) => {
      for (let hop = 0; hop < i; hop++) await Promise.resolve();
      nc.publish('batching.test', `message ${i}`);
    }),
  );
}

describe('batchSocketWritesPerTurn', () => {
  let server: NatsServerHandle;
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('given it applied, when ten publishes are queued in one turn from chains of their own, then they go out in one socket write, and all arrive', async () => {
    batchSocketWritesPerTurn();
    const publisher = await connect({ servers: server.url });
    const subscriber = await connect({ servers: server.url });
    try {
      const received: string[] = [];
      const subscription = subscriber.subscribe('batching.test', { max: 10, callback: (_, msg) => void received.push(msg.string()) });
      await subscriber.flush();
      const writes = countWrites(publisher);
      await tenPublishesInOneTurn(publisher);
      // The turn ends: what it queued is written.
      await new Promise((resolve) => setImmediate(resolve));
      expect(writes.count()).toBe(1);
      await subscription.closed;
      expect(received).toEqual(Array.from({ length: 10 }, (_, i) => `message ${i}`));
    } finally {
      await publisher.close();
      await subscriber.close();
    }
  });

  it('given it applied, when one turn queues past nats.js pending limit, then what is queued goes out at once, not at the end of the turn', async () => {
    batchSocketWritesPerTurn();
    const publisher = await connect({ servers: server.url });
    try {
      const writes = countWrites(publisher);
      const large = new Uint8Array(40 * 1024);
      publisher.publish('batching.large', large);
      expect(writes.count()).toBe(0);
      publisher.publish('batching.large', large);
      expect(writes.count()).toBe(1);
      await publisher.flush();
    } finally {
      await publisher.close();
    }
  });

  it('given it applied twice, then it patches nats.js once', () => {
    batchSocketWritesPerTurn();
    const protocol = jest.requireActual<{ ProtocolHandler: { prototype: { sendCommand: unknown } } }>('nats/lib/nats-base-client/protocol');
    const patched = protocol.ProtocolHandler.prototype.sendCommand;
    batchSocketWritesPerTurn();
    expect(protocol.ProtocolHandler.prototype.sendCommand).toBe(patched);
  });
});
