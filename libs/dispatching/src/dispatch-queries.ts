import { failure, Outcome, success } from '@campaign-ops/api-errors';
import { DispatchResource, dispatchStreamId } from '@campaign-ops/dispatch-domain';
import { publicEventId } from '@campaign-ops/ids';
import { DispatchByIdRequest, ListDispatchesRequest, ListResult } from '@campaign-ops/service-messages';
import { Injectable } from '@nestjs/common';
import { Filter } from '@campaign-ops/read-store';
import { DispatchStore, fromView } from './dispatch-store';

export interface DispatchHistoryEntry {
  id: string;
  type: string;
  revision: number;
  data: Record<string, unknown>;
  occurred_at: string;
}

/** The read side: a dispatch, a list, and a dispatch's whole history from its stream. */
@Injectable()
export class DispatchQueries {
  constructor(private readonly store: DispatchStore) {}

  async get({ caller, id }: DispatchByIdRequest): Promise<Outcome<DispatchResource>> {
    const view = await this.store.views.get(id);
    // Another account's or mode's dispatch answers exactly as one that does not exist.
    if (!view || view.account_id !== caller.accountId || view.mode !== caller.mode) return failure('resource_missing', `No such dispatch: ${id}`, 'id');
    return success(fromView(view));
  }

  async list({ caller, query }: ListDispatchesRequest): Promise<Outcome<ListResult<DispatchResource>>> {
    const where: Filter = { account_id: caller.accountId, mode: caller.mode };
    if (query.status) where.status = query.status;
    if (query.channel) where.channel = query.channel;
    const page = await this.store.views.find(where, { limit: query.limit, startingAfter: query.startingAfter });
    return success({ data: page.items.map(fromView), hasMore: page.hasMore });
  }

  async history({ caller, id }: DispatchByIdRequest): Promise<Outcome<ListResult<DispatchHistoryEntry>>> {
    const recorded = await this.store.events.readStream(dispatchStreamId(id));
    const owner = recorded[0]?.data as { accountId?: string; mode?: string } | undefined;
    if (!owner || owner.accountId !== caller.accountId || owner.mode !== caller.mode) return failure('resource_missing', `No such dispatch: ${id}`, 'id');
    return success({
      data: recorded.map((r) => ({ id: publicEventId(r.id), type: r.type, revision: r.revision, data: r.data, occurred_at: r.occurredAt })),
      hasMore: false,
    });
  }
}
