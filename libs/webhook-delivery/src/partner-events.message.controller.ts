import { MessageController } from '@campaign-ops/service-runtime';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { DurableConsumerOptions } from '@campaign-ops/bus-transport';
import { EventByIdRequest, ListEventsRequest, SUBJECTS } from '@campaign-ops/service-messages';
import { PARTNER_EVENT_SUBJECTS, PartnerEvent } from '@campaign-ops/webhook-domain';
import { EventQueries } from './event-queries';
import { FanOut } from './fan-out';

/** Partner events: each one fanned out to the endpoints subscribed to it, and served by the Events API. */
@MessageController()
export class PartnerEventsMessageController {
  constructor(
    private readonly fanOut: FanOut,
    private readonly events: EventQueries,
  ) {}

  @EventPattern(PARTNER_EVENT_SUBJECTS, { durable: 'webhook-fan-out' } satisfies DurableConsumerOptions)
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
