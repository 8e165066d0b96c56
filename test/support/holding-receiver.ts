import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeldRequest {
  eventId: string;
  deliveryId: string;
  arrivedAt: number;
  /** When the sender hung up or got its answer; null while the request is still open. */
  closedAt: number | null;
}

export interface HoldingReceiver {
  /** `http://127.0.0.1:PORT/hooks` */
  readonly url: string;
  /** Every request, in arrival order. */
  requests(): HeldRequest[];
  /** Requests open right now, and the most that were ever open at once. */
  open(): number;
  mostOpen(): number;
  close(): Promise<void>;
}

/**
 * A partner endpoint on 127.0.0.1 that takes its time: it answers the n-th request (from 0) 200
 * after `holdMs(n)` ms, or never when that is null (the request stays open until the sender
 * hangs up). It counts the requests open at once. It does not check signatures: the
 * PartnerReceiver of @campaign-ops/testing/webhook-sender does that.
 */
export async function startHoldingReceiver(holdMs: (index: number) => number | null): Promise<HoldingReceiver> {
  const held: HeldRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let open = 0;
  let mostOpen = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const index = held.length;
    const request: HeldRequest = {
      eventId: String(req.headers['x-service-event-id'] ?? ''),
      deliveryId: String(req.headers['x-service-delivery-id'] ?? ''),
      arrivedAt: Date.now(),
      closedAt: null,
    };
    held.push(request);
    mostOpen = Math.max(mostOpen, ++open);
    res.on('close', () => {
      open--;
      request.closedAt = Date.now();
    });
    req.resume();
    const ms = holdMs(index);
    if (ms === null) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    }, ms);
    timers.add(timer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    requests: () => held.map((r) => ({ ...r })),
    open: () => open,
    mostOpen: () => mostOpen,
    close: async () => {
      timers.forEach(clearTimeout);
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}
