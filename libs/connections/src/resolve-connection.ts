import { ReadStore } from '@campaign-ops/read-store';
import { ResolvedConnection, ResolveConnectionRequest } from '@campaign-ops/service-messages';

/** A connection as its read model keeps it (the aggregate and its API arrive in a later issue). */
export interface ConnectionView {
  id: string;
  account_id: string;
  mode: 'live' | 'test';
  channel: string;
  status: 'pending' | 'active' | 'reauth_required' | 'revoked';
  [key: string]: unknown;
}

/** The connection that counts for a channel: an active one if any, else the newest of any status. */
export async function resolveConnection(readStore: ReadStore, request: ResolveConnectionRequest): Promise<ResolvedConnection> {
  const views = readStore.collection<ConnectionView>('connections', { indexes: ['account_id', 'mode', 'channel', 'status'] });
  const scope = { account_id: request.accountId, mode: request.mode, channel: request.channel };
  const active = await views.find({ ...scope, status: 'active' }, { limit: 1 });
  const chosen = active.items[0] ?? (await views.find({ ...scope, status: { $in: ['reauth_required', 'pending'] } }, { limit: 1 })).items[0];
  return { connection: chosen ? { id: chosen.id, status: chosen.status } : null };
}
