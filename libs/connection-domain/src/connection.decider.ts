import { assertNever, Decider, DomainEvent, DomainRuleViolation, eventVersions } from '@campaign-ops/decider';

/**
 * A connection links an account, in one mode, to one ad account at a provider (docs/api.md#connections-and-oauth). Its
 * stream holds what was decided about it; tokens never do: they live sealed in the token vault,
 * and events carry only what may be shown (scopes, the ad account's currency and timezone, expiry).
 */
export type { Mode } from '@campaign-ops/account-domain';
import type { Mode } from '@campaign-ops/account-domain';
export type ConnectionStatus = 'pending' | 'active' | 'reauth_required' | 'revoked';
/** How the connection got its credentials. */
export type AuthorizationMethod = 'token_import' | 'oauth' | 'sandbox';

/** An OAuth round in progress: the hash of its single-use `state`, where the browser goes back, until when. */
export interface OAuthRound {
  stateHash: string;
  redirectUri: string;
  expiresAt: string;
}
/** What the provider says of the ad account, read with the token at connect time. */
export interface ProviderAccount {
  currency: string;
  timezone: string;
}
interface Identity {
  connectionId: string;
  accountId: string;
  mode: Mode;
  channel: string;
  providerAccountId: string;
}

export type ConnectionRequested = DomainEvent<'ConnectionRequested', Identity & { scopes: string[]; oauth: OAuthRound; requestedAt: string }>;
export type ConnectionActivated = DomainEvent<
  'ConnectionActivated',
  Identity & ProviderAccount & { scopes: string[]; expiresAt: string | null; method: AuthorizationMethod; stateHash: string | null; activatedAt: string }
>;
export type OAuthRoundStarted = DomainEvent<'OAuthRoundStarted', { oauth: OAuthRound; startedAt: string }>;
export type TokenRefreshed = DomainEvent<'TokenRefreshed', { expiresAt: string | null; refreshedAt: string }>;
export type ReauthRequired = DomainEvent<'ReauthRequired', { reason: string; at: string }>;
export type ConnectionReauthorized = DomainEvent<
  'ConnectionReauthorized',
  ProviderAccount & { scopes: string[]; expiresAt: string | null; method: AuthorizationMethod; stateHash: string | null; reauthorizedAt: string }
>;
export type ConnectionRevoked = DomainEvent<'ConnectionRevoked', { reason: 'deleted' | 'replaced'; revokedAt: string }>;
export type ConnectionEvent =
  ConnectionRequested | ConnectionActivated | OAuthRoundStarted | TokenRefreshed | ReauthRequired | ConnectionReauthorized | ConnectionRevoked;

/**
 * Each type's upcasters from its older versions, oldest first (docs/architecture.md, "Event versioning"). All are
 * at version 1: `method: 'sandbox'` on ConnectionReauthorized (5bd326b) only widened what v1 holds.
 */
export const CONNECTION_EVENTS = eventVersions<ConnectionEvent>('connection', {
  ConnectionRequested: [],
  ConnectionActivated: [],
  OAuthRoundStarted: [],
  TokenRefreshed: [],
  ReauthRequired: [],
  ConnectionReauthorized: [],
  ConnectionRevoked: [],
});

export interface Connection extends Omit<Identity, 'connectionId'> {
  id: string;
  status: ConnectionStatus;
  scopes: string[];
  currency: string | null;
  timezone: string | null;
  expiresAt: string | null;
  reauthReason: string | null;
  oauth: OAuthRound | null;
  /** States already exchanged: a second use is told apart from a state never issued. */
  usedStateHashes: string[];
  createdAt: string;
  updatedAt: string;
}
export type ConnectionState = { status: 'none' } | Connection;

type Credentials = { scopes: string[]; account: ProviderAccount; expiresAt: string | null; now: string };
export type ConnectionCommand =
  | (Identity & Credentials & { type: 'ImportToken'; sandbox: boolean })
  | (Identity & { type: 'StartOAuth'; scopes: string[]; oauth: OAuthRound; now: string })
  | (Credentials & { type: 'CompleteOAuth'; stateHash: string })
  | { type: 'StartReauthorization'; oauth: OAuthRound; now: string }
  | (Credentials & { type: 'Reauthorize'; sandbox?: boolean })
  | { type: 'RefreshToken'; expiresAt: string | null; now: string }
  | { type: 'RequireReauth'; reason: string; now: string }
  | { type: 'Revoke'; reason: 'deleted' | 'replaced'; now: string };

export class ConnectionNotFound extends DomainRuleViolation {
  readonly rule = 'resource_missing';
}
export class ConnectionAlreadyExists extends DomainRuleViolation {
  readonly rule = 'connection_already_exists';
}
export class ConnectionRevokedError extends DomainRuleViolation {
  readonly rule = 'connection_revoked';
}
export class ConnectionNotActive extends DomainRuleViolation {
  readonly rule = 'connection_not_active';
}
/** A state never issued, or past its time: 400 `state_invalid` (there is no partner to send the browser back to). */
export class OAuthStateUnknown extends DomainRuleViolation {
  readonly rule = 'state_invalid';
}
/** A state issued but spent (used, or its connection deleted): the browser goes back with `error=state_invalid`. */
export class OAuthStateSpent extends DomainRuleViolation {
  readonly rule = 'state_spent';
}

export const CONNECTION_STREAM_PREFIX = 'connection-';
export const connectionStreamId = (connectionId: string) => `${CONNECTION_STREAM_PREFIX}${connectionId}`;

/**
 * The OAuth round a returning `state` (by its hash) belongs to, checked before its code is
 * exchanged: never issued or past its time is `OAuthStateUnknown`, already used (or its
 * connection deleted meanwhile) is `OAuthStateSpent`. `decide` applies the same check again.
 */
export function oauthRoundFor(state: ConnectionState, stateHash: string, now: string): OAuthRound {
  if (state.status === 'none') throw new OAuthStateUnknown('no such OAuth state');
  const round = state.oauth;
  if (round?.stateHash !== stateHash) {
    if (state.usedStateHashes.includes(stateHash) || state.status === 'revoked') throw new OAuthStateSpent('this consent was already used');
    throw new OAuthStateUnknown('no such OAuth state');
  }
  if (now >= round.expiresAt) throw new OAuthStateUnknown('the OAuth state has expired');
  return round;
}

const event = CONNECTION_EVENTS.event;

export function decide(command: ConnectionCommand, state: ConnectionState): ConnectionEvent[] {
  if (command.type === 'ImportToken' || command.type === 'StartOAuth') {
    if (state.status !== 'none') throw new ConnectionAlreadyExists(`connection ${command.connectionId} exists`);
    const { connectionId, accountId, mode, channel, providerAccountId, scopes, now } = command;
    const identity = { connectionId, accountId, mode, channel, providerAccountId };
    if (command.type === 'StartOAuth') return [event('ConnectionRequested', { ...identity, scopes, oauth: command.oauth, requestedAt: now })];
    const method = command.sandbox ? 'sandbox' : 'token_import';
    return [event('ConnectionActivated', { ...identity, scopes, ...command.account, expiresAt: command.expiresAt, method, stateHash: null, activatedAt: now })];
  }
  if (state.status === 'none') throw new ConnectionNotFound('no such connection');
  switch (command.type) {
    case 'CompleteOAuth': {
      const round = oauthRoundFor(state, command.stateHash, command.now);
      return [credentialed(state, command, 'oauth', round.stateHash)];
    }
    case 'StartReauthorization':
      assertNotRevoked(state);
      return [event('OAuthRoundStarted', { oauth: command.oauth, startedAt: command.now })];
    case 'Reauthorize':
      assertNotRevoked(state);
      return [credentialed(state, command, command.sandbox ? 'sandbox' : 'token_import', null)];
    case 'RefreshToken':
      assertNotRevoked(state);
      if (state.status !== 'active') throw new ConnectionNotActive(`a ${state.status} connection has no token to refresh`);
      return [event('TokenRefreshed', { expiresAt: command.expiresAt, refreshedAt: command.now })];
    case 'RequireReauth':
      // Every call that meets the refusal says so; the connection needs it once.
      if (state.status === 'reauth_required' || state.status === 'revoked') return [];
      if (state.status === 'pending') throw new ConnectionNotActive('a pending connection was never authorized');
      return [event('ReauthRequired', { reason: command.reason, at: command.now })];
    case 'Revoke':
      if (state.status === 'revoked') return [];
      return [event('ConnectionRevoked', { reason: command.reason, revokedAt: command.now })];
    default:
      return assertNever(command);
  }
}

function assertNotRevoked(state: Connection): void {
  if (state.status === 'revoked') throw new ConnectionRevokedError('the connection was revoked');
}

/** New credentials: a pending connection becomes active for the first time, any other is reauthorized. */
function credentialed(state: Connection, credentials: Credentials, method: AuthorizationMethod, stateHash: string | null): ConnectionEvent {
  const { scopes, account, expiresAt, now } = credentials;
  if (state.status === 'pending') {
    const { id: connectionId, accountId, mode, channel, providerAccountId } = state;
    return event('ConnectionActivated', {
      connectionId,
      accountId,
      mode,
      channel,
      providerAccountId,
      scopes,
      ...account,
      expiresAt,
      method,
      stateHash,
      activatedAt: now,
    });
  }
  return event('ConnectionReauthorized', { scopes, ...account, expiresAt, method, stateHash, reauthorizedAt: now });
}

export function evolve(state: ConnectionState, event: ConnectionEvent): ConnectionState {
  switch (event.type) {
    case 'ConnectionRequested': {
      const { connectionId, accountId, mode, channel, providerAccountId, scopes, oauth, requestedAt } = event.data;
      return {
        id: connectionId,
        accountId,
        mode,
        channel,
        providerAccountId,
        status: 'pending',
        scopes,
        currency: null,
        timezone: null,
        expiresAt: null,
        reauthReason: null,
        oauth,
        usedStateHashes: [],
        createdAt: requestedAt,
        updatedAt: requestedAt,
      };
    }
    case 'ConnectionActivated': {
      const { connectionId, accountId, mode, channel, providerAccountId, scopes, currency, timezone, expiresAt, stateHash, activatedAt } = event.data;
      const before =
        state.status === 'none' ? { usedStateHashes: [], createdAt: activatedAt } : { usedStateHashes: state.usedStateHashes, createdAt: state.createdAt };
      return {
        id: connectionId,
        accountId,
        mode,
        channel,
        providerAccountId,
        status: 'active',
        scopes,
        currency,
        timezone,
        expiresAt,
        reauthReason: null,
        oauth: null,
        usedStateHashes: stateHash ? [...before.usedStateHashes, stateHash] : before.usedStateHashes,
        createdAt: before.createdAt,
        updatedAt: activatedAt,
      };
    }
  }
  if (state.status === 'none') return state;
  switch (event.type) {
    case 'OAuthRoundStarted':
      return { ...state, oauth: event.data.oauth, updatedAt: event.data.startedAt };
    case 'TokenRefreshed':
      return { ...state, expiresAt: event.data.expiresAt, updatedAt: event.data.refreshedAt };
    case 'ReauthRequired':
      return { ...state, status: 'reauth_required', reauthReason: event.data.reason, updatedAt: event.data.at };
    case 'ConnectionReauthorized': {
      const { scopes, currency, timezone, expiresAt, stateHash, reauthorizedAt } = event.data;
      const usedStateHashes = stateHash ? [...state.usedStateHashes, stateHash] : state.usedStateHashes;
      return { ...state, status: 'active', scopes, currency, timezone, expiresAt, reauthReason: null, oauth: null, usedStateHashes, updatedAt: reauthorizedAt };
    }
    case 'ConnectionRevoked':
      return { ...state, status: 'revoked', oauth: null, updatedAt: event.data.revokedAt };
    default:
      return assertNever(event);
  }
}

export const connectionDecider: Decider<ConnectionCommand, ConnectionEvent, ConnectionState> = { initialState: { status: 'none' }, decide, evolve };

export const upcastConnectionEvent = CONNECTION_EVENTS.upcast;
