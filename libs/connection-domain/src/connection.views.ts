import { Connection, ConnectionEvent, Mode } from './connection.decider';

export const environmentOf = (mode: Mode): 'live' | 'sandbox' => (mode === 'live' ? 'live' : 'sandbox');

/** The connection resource exactly as docs/api.md#connections-and-oauth shows it (`authorization_url` is added only by the answer that starts an OAuth round). */
export interface ConnectionResource {
  id: string;
  channel: string;
  status: Connection['status'];
  provider_account_id: string;
  environment: 'live' | 'sandbox';
  scopes: string[];
  currency: string | null;
  timezone: string | null;
  expires_at: string | null;
  reauth_reason: string | null;
  created_at: string;
  updated_at: string;
}

export const toConnectionResource = (c: Connection): ConnectionResource => ({
  id: c.id,
  channel: c.channel,
  status: c.status,
  provider_account_id: c.providerAccountId,
  environment: environmentOf(c.mode),
  scopes: c.scopes,
  currency: c.currency,
  timezone: c.timezone,
  expires_at: c.expiresAt,
  reauth_reason: c.reauthReason,
  created_at: c.createdAt,
  updated_at: c.updatedAt,
});

/** A webhook event as partners receive it (docs/api.md#webhooks-and-signatures), before it gets its id. */
export interface ConnectionNotification {
  event: 'connection.active' | 'connection.reauth_required';
  data: Record<string, unknown>;
}

/**
 * The partner-facing event a domain event becomes, given the connection right after it: partners
 * hear when a connection can be used (activated, or active again) and when it needs them.
 */
export function toConnectionNotification(event: ConnectionEvent, after: Connection): ConnectionNotification | null {
  // docs/api.md's field order: connection_id, channel, status, provider_account_id, environment (+ reason).
  const data = (status: 'active' | 'reauth_required') => ({
    connection_id: after.id,
    channel: after.channel,
    status,
    provider_account_id: after.providerAccountId,
    environment: environmentOf(after.mode),
  });
  switch (event.type) {
    case 'ConnectionActivated':
    case 'ConnectionReauthorized':
      return { event: 'connection.active', data: data('active') };
    case 'ReauthRequired':
      return { event: 'connection.reauth_required', data: { ...data('reauth_required'), reason: event.data.reason } };
    case 'ConnectionRequested':
    case 'OAuthRoundStarted':
    case 'TokenRefreshed':
    case 'ConnectionRevoked':
      return null;
  }
}
