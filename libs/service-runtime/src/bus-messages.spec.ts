/**
 * A message handler runs under the request id of the partner request it belongs to, so its log
 * lines carry it: from a request's X-Request-Id header, or from a relayed event's metadata. The
 * transport runs busRequestContext around every handler, as start-app gives it.
 */
import { INestMicroservice } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { EventPattern, MessagePattern } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import { InProcessBus } from '@campaign-ops/adapters/bus';
import { waitFor } from '@campaign-ops/testing/bus';
import { BusClient, BusRecord, BusTransport } from '@campaign-ops/bus-transport';
import { busRequestContext, MessageController } from './bus-messages';
import { currentRequestId } from './request-context';

const seen: (string | undefined)[] = [];

@MessageController()
class WhoAsksController {
  @MessagePattern('rpc.who')
  async who() {
    await new Promise((resolve) => setImmediate(resolve)); // still known after an await
    return { requestId: currentRequestId() ?? null };
  }

  @MessagePattern('rpc.fail')
  fail(): never {
    throw new Error('the ledger is closed');
  }

  @EventPattern('evt.who.>', { durable: 'who' })
  consume() {
    seen.push(currentRequestId());
  }
}

describe('@MessageController and busRequestContext: request ids and errors of bus handlers', () => {
  let bus: InProcessBus;
  let app: INestMicroservice;
  let client: BusClient;

  beforeAll(async () => {
    bus = InProcessBus.open({ pollIntervalMs: 20 });
    const module = await Test.createTestingModule({ controllers: [WhoAsksController] }).compile();
    app = module.createNestMicroservice({ strategy: new BusTransport(bus, undefined, busRequestContext), logger: false });
    await app.listen();
    client = new BusClient({ bus, requestTimeoutMs: 5000 });
  });

  afterAll(async () => {
    await app.close();
    await bus.close();
  });

  it("runs a request's handler under its X-Request-Id", async () => {
    await expect(firstValueFrom(client.send('rpc.who', new BusRecord({}, { 'X-Request-Id': 'req_partner1' })))).resolves.toEqual({ requestId: 'req_partner1' });
    await expect(firstValueFrom(client.send('rpc.who', {}))).resolves.toEqual({ requestId: null });
  });

  it("gives the caller the handler's own error message", async () => {
    await expect(firstValueFrom(client.send('rpc.fail', {}))).rejects.toThrow('the ledger is closed');
  });

  it("runs an event's handler under the request id in its metadata", async () => {
    await bus.publish('evt.who.DispatchAccepted', { metadata: { requestId: 'req_launch7' } });
    await bus.publish('evt.who.Other', { metadata: {} });
    await waitFor(() => seen.length === 2, 'both events');
    expect(seen).toEqual(['req_launch7', undefined]);
  });
});
