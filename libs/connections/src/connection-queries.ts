import { Injectable } from '@nestjs/common';
import { failure, Outcome, success } from '@campaign-ops/api-errors';
import { ConnectionResource } from '@campaign-ops/connection-domain';
import { Filter } from '@campaign-ops/read-store';
import { ConnectionByIdRequest, ListConnectionsRequest, ListResult, ResolvedConnection, ResolveConnectionRequest } from '@campaign-ops/service-messages';
import { ConnectionStore, ConnectionView, fromView } from './connection-store';

/** Connections of a channel read at once to find the one that counts (see resolve). */
export const RESOLVE_PAGE = 20;

/** The read side: a connection, a list, and which connection a dispatch would use. Always scoped to account and mode. */
@Injectable()
export class ConnectionQueries {
  constructor(private readonly store: ConnectionStore) {}

  async get({ caller, id }: ConnectionByIdRequest): Promise<Outcome<ConnectionResource>> {
    const view = await this.store.views.get(id);
    // Another account's or mode's connection answers exactly as one that does not exist.
    if (!view || view.account_id !== caller.accountId || view.mode !== caller.mode) return failure('resource_missing', `No such connection: ${id}`, 'id');
    return success(fromView(view));
  }

  async list({ caller, query }: ListConnectionsRequest): Promise<Outcome<ListResult<ConnectionResource>>> {
    const where: Filter = { account_id: caller.accountId, mode: caller.mode };
    if (query.channel) where.channel = query.channel;
    if (query.status) where.status = query.status;
    const page = await this.store.views.find(where, { limit: query.limit, startingAfter: query.startingAfter });
    return success({ data: page.items.map(fromView), hasMore: page.hasMore });
  }

  /** The connection that counts for a channel: the active one, else one that needs reauthorization, else the newest pending one. */
  async resolve(request: ResolveConnectionRequest): Promise<ResolvedConnection> {
    const scope = { account_id: request.accountId, mode: request.mode, channel: request.channel };
    // One read on every launch: the channel's connections that count, newest first. At most one is
    // active or reauth_required (the one-active rule); pending ones are few, so the page nearly
    // always holds the answer. Only when it is full of pending ones is the held one asked for apart.
    const page = await this.store.views.find({ ...scope, status: { $in: ['active', 'reauth_required', 'pending'] } }, { limit: RESOLVE_PAGE });
    const items = page.items as ConnectionView[];
    const held =
      items.find((view) => view.status !== 'pending') ??
      (page.hasMore
        ? ((await this.store.views.find({ ...scope, status: { $in: ['active', 'reauth_required'] } }, { limit: 1 })).items as ConnectionView[])[0]
        : undefined);
    const found = held ?? items[0];
    return { connection: found ? { id: found.id, status: found.status } : null };
  }
}
