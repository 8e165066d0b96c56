import { Inject, Injectable } from '@nestjs/common';
import { deterministicUlid } from '@campaign-ops/ids';
import { Collection } from '@campaign-ops/read-store';
import { Delivery, PartnerEvent, PartnerEventSink, pendingDelivery, webhookBody } from '@campaign-ops/webhook-domain';
import { StoredPartnerEvent } from './delivery-store';
import { DeliveryLoop } from './delivery-loop';
import { EndpointStore } from './endpoint-store';
import { DELIVERIES, PARTNER_EVENTS } from './webhook-delivery.tokens';

/**
 * Turns one partner event into one stored delivery per subscribed endpoint of the same account
 * and mode. Delivery ids derive from (event, endpoint), so a redelivered event adds nothing: the
 * fan-out is idempotent, and every delivery is stored before anything is sent: where a lane is
 * free (or its line has a place), stored leased to this process and sent at once (or by the
 * endpoint's next free lane), with no claim. It takes partner
 * events from the bus, or, in a process that also runs their relays (standalone), from the relays'
 * hands, as their sink.
 */
@Injectable()
export class FanOut implements PartnerEventSink {
  constructor(
    private readonly endpoints: EndpointStore,
    @Inject(DELIVERIES) private readonly deliveries: Collection<Delivery>,
    @Inject(PARTNER_EVENTS) private readonly events: Collection<StoredPartnerEvent>,
    @Inject(DeliveryLoop) private readonly loop: Pick<DeliveryLoop, 'kick' | 'reserve' | 'queue'>,
  ) {}

  /** As the relays' sink: the ids the fan-out derives make a repeat harmless, so `msgId` is not needed. */
  accept(event: PartnerEvent, _msgId: string): Promise<void> {
    return this.handle(event);
  }

  async handle(event: PartnerEvent): Promise<void> {
    await this.events.insert({ id: event.id, account_id: event.accountId, mode: event.mode, type: event.event, created_at: event.timestamp, data: event.data });
    const body = webhookBody(event);
    const now = new Date().toISOString();
    let startingAfter: string | undefined;
    const stored: string[] = [];
    for (;;) {
      const page = await this.endpoints.views.find(
        { account_id: event.accountId, mode: event.mode, enabled: true, deleted: false },
        { limit: 100, startingAfter, order: 'asc' },
      );
      for (const endpoint of page.items) {
        if (!endpoint.events.includes(event.event)) continue;
        const pending = pendingDelivery(
          {
            id: `dlv_${deterministicUlid(Date.parse(event.timestamp), `${event.id}:${endpoint.id}`)}`,
            endpoint_id: endpoint.id,
            account_id: event.accountId,
            mode: event.mode,
            event_id: event.id,
            event: event.event,
            body,
          },
          now,
        );
        // A lane free for this endpoint now, or a place in line for its next free one: stored
        // leased, as a claim leaves it, and sent from here or by that lane, without a claim.
        const lane = this.loop.reserve(endpoint.id) ?? this.loop.queue(endpoint.id);
        const delivery = lane ? { ...pending, next_attempt_at: lane.leaseUntil, lease_until: lane.leaseUntil } : pending;
        let inserted: boolean;
        try {
          inserted = await this.deliveries.insert(delivery);
        } catch (error) {
          lane?.release();
          throw error;
        }
        if (!inserted) lane?.release();
        else if (lane) lane.send(delivery);
        else stored.push(endpoint.id);
      }
      if (!page.hasMore) break;
      startingAfter = page.items[page.items.length - 1].id;
    }
    if (stored.length > 0) this.loop.kick(stored);
  }
}
