import { Inject, Injectable } from '@nestjs/common';
import { failure, Outcome, success } from '@campaign-ops/api-errors';
import { newId } from '@campaign-ops/ids';
import { Collection } from '@campaign-ops/read-store';
import { Delivery, pendingDelivery, toDeliveryResource } from '@campaign-ops/webhook-domain';
import { ListDeliveriesRequest, ListResult, RedeliverRequest } from '@campaign-ops/service-messages';
import { DeliveryLoop } from './delivery-loop';
import { EndpointStore } from './endpoint-store';
import { DELIVERIES } from './webhook-delivery.tokens';

type DeliveryResource = ReturnType<typeof toDeliveryResource>;

/** The delivery log of an endpoint, and redelivery of any of its deliveries. */
@Injectable()
export class DeliveryQueries {
  constructor(
    private readonly endpoints: EndpointStore,
    @Inject(DELIVERIES) private readonly deliveries: Collection<Delivery>,
    @Inject(DeliveryLoop) private readonly loop: Pick<DeliveryLoop, 'kick'>,
  ) {}

  async list({ caller, id, query }: ListDeliveriesRequest): Promise<Outcome<ListResult<DeliveryResource>>> {
    if (!(await this.endpoints.owned(id, caller.accountId, caller.mode))) return failure('resource_missing', `No such webhook endpoint: ${id}`, 'id');
    const page = await this.deliveries.find({ endpoint_id: id }, { limit: query.limit, startingAfter: query.startingAfter });
    return success({ data: page.items.map(toDeliveryResource), hasMore: page.hasMore });
  }

  /** Forgets finished deliveries (succeeded or failed) created over `retentionMs` ago; returns how many. */
  async purgeFinished(retentionMs: number): Promise<number> {
    const oldest = new Date(Date.now() - retentionMs).toISOString();
    let purged = 0;
    for (;;) {
      const page = await this.deliveries.find({ status: { $in: ['succeeded', 'failed'] }, created_at: { $lt: oldest } }, { limit: 500, order: 'asc' });
      for (const delivery of page.items) if (await this.deliveries.delete(delivery.id)) purged++;
      if (!page.hasMore) return purged;
    }
  }

  /** A new delivery of the same event, with the same body (and so the same event id). */
  async redeliver({ caller, id, deliveryId }: RedeliverRequest): Promise<Outcome<DeliveryResource>> {
    if (!(await this.endpoints.owned(id, caller.accountId, caller.mode))) return failure('resource_missing', `No such webhook endpoint: ${id}`, 'id');
    const original = await this.deliveries.get(deliveryId);
    if (!original || original.endpoint_id !== id) return failure('resource_missing', `No such delivery: ${deliveryId}`, 'delivery_id');
    const now = new Date().toISOString();
    const { endpoint_id, account_id, mode, event_id, event, body } = original;
    const fresh = pendingDelivery({ id: newId('dlv'), endpoint_id, account_id, mode, event_id, event, body }, now);
    await this.deliveries.insert(fresh);
    this.loop.kick([id]);
    return success(toDeliveryResource(fresh));
  }
}
