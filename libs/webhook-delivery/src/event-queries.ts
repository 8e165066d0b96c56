import { Inject, Injectable } from '@nestjs/common';
import { failure, Outcome, success } from '@campaign-ops/api-errors';
import { Collection, Filter } from '@campaign-ops/read-store';
import { EventByIdRequest, ListEventsRequest, ListResult } from '@campaign-ops/service-messages';
import { StoredPartnerEvent } from './delivery-store';
import { PARTNER_EVENTS } from './webhook-delivery.tokens';

/** The Events API keeps 30 days: what a partner's endpoint missed, it can catch up on here. */
export const EVENT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export interface PartnerEventResource {
  id: string;
  event: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** The same shape as a webhook body. */
const toResource = (e: StoredPartnerEvent): PartnerEventResource => ({ id: e.id, event: e.type, timestamp: e.created_at, data: e.data });

@Injectable()
export class EventQueries {
  constructor(@Inject(PARTNER_EVENTS) private readonly events: Collection<StoredPartnerEvent>) {}

  async list({ caller, query }: ListEventsRequest): Promise<Outcome<ListResult<PartnerEventResource>>> {
    const oldest = new Date(Date.now() - EVENT_RETENTION_MS).toISOString();
    const after = query.createdAfter && query.createdAfter > oldest ? query.createdAfter : oldest;
    const where: Filter = { account_id: caller.accountId, mode: caller.mode, created_at: { $gt: after } };
    if (query.type) where.type = query.type;
    const page = await this.events.find(where, { limit: query.limit, startingAfter: query.startingAfter });
    return success({ data: page.items.map(toResource), hasMore: page.hasMore });
  }

  async get({ caller, id }: EventByIdRequest): Promise<Outcome<PartnerEventResource>> {
    const event = await this.events.get(id);
    const tooOld = event && Date.parse(event.created_at) < Date.now() - EVENT_RETENTION_MS;
    if (!event || tooOld || event.account_id !== caller.accountId || event.mode !== caller.mode)
      return failure('resource_missing', `No such event: ${id}`, 'id');
    return success(toResource(event));
  }

  /** Forgets events past the retention; returns how many. */
  async purgeExpired(): Promise<number> {
    const oldest = new Date(Date.now() - EVENT_RETENTION_MS).toISOString();
    let purged = 0;
    for (;;) {
      const page = await this.events.find({ created_at: { $lt: oldest } }, { limit: 500, order: 'asc' });
      for (const event of page.items) if (await this.events.delete(event.id)) purged++;
      if (!page.hasMore) return purged;
    }
  }
}
