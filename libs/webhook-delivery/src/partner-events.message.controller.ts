import { MessageController } from '@campaign-ops/service-runtime';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { DurableConsumerOptions } from '@campaign-ops/bus-transport';
import { EventByIdRequest, ListEventsRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { PARTNER_EVENT_SUBJECTS, PartnerEvent } from '@campaign-ops/webhook-domain';
import { EventQueries } from './event-queries';
import { FanOut } from './fan-out';

/**
 * Lanes of the fan-out's durable consumer. One lane fanned out one event at a time (its insert's
 * commit, then the next pull): over NATS it did 236 events a second behind 313 launches a second.
 * Fan-outs need no order among themselves (docs/api.md: webhooks come in no guaranteed order), and
 * a repeat adds nothing (delivery ids derive from event and endpoint).
 */
export const FAN_OUT_LANES = 8;

/** Partner events: each one fanned out to the endpoints subscribed to it, and served by the Events API. */
@MessageController()
export class PartnerEventsMessageController {
  constructor(
    private readonly fanOut: FanOut,
    private readonly events: EventQueries,
  ) {}

  @EventPattern(PARTNER_EVENT_SUBJECTS, { durable: 'webhook-fan-out', lanes: FAN_OUT_LANES } satisfies DurableConsumerOptions)
  fanOutEvent(@Payload() event: PartnerEvent) {
    return this.fanOut.handle(event);
  }

  @MessagePattern(SUBJECTS.eventsList)
  list(@Payload() request: ListEventsRequest) {
    return this.events.list(request);
  }

  @MessagePattern(SUBJECTS.eventsGet)
  get(@Payload() request: EventByIdRequest) {
    return this.events.get(request);
  }
}
