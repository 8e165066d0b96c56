import { assertNever, Decider, DomainEvent, DomainRuleViolation, eventVersions, storedVersion } from '@campaign-ops/decider';
import { Mode, MODES } from './mode';

export const DEFAULT_STARTING_CREDITS = 1000;

/** `oauthRedirectUris`: absent on accounts opened before they could be registered (none then). */
export type AccountOpened = DomainEvent<
  'AccountOpened',
  { accountId: string; name: string; credits: Record<Mode, number>; oauthRedirectUris?: string[]; openedAt: string }
>;
/** What an operator changed of the account; only the fields that changed are present. */
export type AccountSettingsChanged = DomainEvent<'AccountSettingsChanged', { name?: string; oauthRedirectUris?: string[]; changedAt: string }>;
export type ApiKeyIssued = DomainEvent<'ApiKeyIssued', { keyId: string; mode: Mode; keyHash: string; issuedAt: string }>;
export type ApiKeyRevoked = DomainEvent<'ApiKeyRevoked', { keyId: string; revokedAt: string }>;
export type CreditsGranted = DomainEvent<'CreditsGranted', { mode: Mode; amount: number; grantedAt: string }>;
export type AccountEvent = AccountOpened | AccountSettingsChanged | ApiKeyIssued | ApiKeyRevoked | CreditsGranted;

/**
 * Each type's upcasters from its older versions, oldest first (docs/architecture.md, "Event versioning"); all are
 * still at version 1: AccountOpened gained its optional `oauthRedirectUris` without a new version,
 * since an older event reads as an account with none registered.
 */
export const ACCOUNT_EVENTS = eventVersions<AccountEvent>('account', {
  AccountOpened: [],
  AccountSettingsChanged: [],
  ApiKeyIssued: [],
  ApiKeyRevoked: [],
  CreditsGranted: [],
});
const event = ACCOUNT_EVENTS.event;

export interface Account {
  id: string;
  name: string;
  credits: Record<Mode, number>;
  /** Where the account's OAuth rounds may send a person back (docs/api.md#keys-and-modes, §4): matched on origin and path. */
  oauthRedirectUris: string[];
  keys: Record<string, { mode: Mode; revoked: boolean }>;
  createdAt: string;
}
export type AccountState = { status: 'none' } | ({ status: 'open' } & Account);

export type AccountCommand =
  | { type: 'OpenAccount'; accountId: string; name: string; credits: number; oauthRedirectUris?: string[]; now: string }
  | { type: 'ChangeAccountSettings'; name?: string; oauthRedirectUris?: string[]; now: string }
  | { type: 'IssueApiKey'; keyId: string; mode: Mode; keyHash: string; now: string }
  | { type: 'RevokeApiKey'; keyId: string; now: string }
  | { type: 'GrantCredits'; mode: Mode; amount: number; now: string };

export class AccountNotFound extends DomainRuleViolation {
  readonly rule = 'resource_missing';
}
export class AccountAlreadyOpen extends DomainRuleViolation {
  readonly rule = 'account_already_open';
}
export class ApiKeyNotFound extends DomainRuleViolation {
  readonly rule = 'resource_missing';
}

export const ACCOUNT_STREAM_PREFIX = 'account-';
export const accountStreamId = (accountId: string) => `${ACCOUNT_STREAM_PREFIX}${accountId}`;

export function decide(command: AccountCommand, state: AccountState): AccountEvent[] {
  if (command.type === 'OpenAccount') {
    if (state.status === 'open') throw new AccountAlreadyOpen(`account ${command.accountId} exists`);
    const uris = command.oauthRedirectUris ?? [];
    return [
      event('AccountOpened', {
        accountId: command.accountId,
        name: command.name,
        credits: { live: command.credits, test: command.credits },
        ...(uris.length > 0 ? { oauthRedirectUris: [...new Set(uris)] } : {}),
        openedAt: command.now,
      }),
    ];
  }
  if (state.status === 'none') throw new AccountNotFound('no such account');
  switch (command.type) {
    case 'ChangeAccountSettings': {
      const uris = command.oauthRedirectUris === undefined ? undefined : [...new Set(command.oauthRedirectUris)];
      const name = command.name !== undefined && command.name !== state.name ? { name: command.name } : {};
      const changedUris = uris !== undefined && !sameList(uris, state.oauthRedirectUris) ? { oauthRedirectUris: uris } : {};
      // Setting what is already set changes nothing, and records nothing.
      if (!('name' in name) && !('oauthRedirectUris' in changedUris)) return [];
      return [event('AccountSettingsChanged', { ...name, ...changedUris, changedAt: command.now })];
    }
    case 'IssueApiKey':
      return [event('ApiKeyIssued', { keyId: command.keyId, mode: command.mode, keyHash: command.keyHash, issuedAt: command.now })];
    case 'RevokeApiKey': {
      const key = state.keys[command.keyId];
      if (!key) throw new ApiKeyNotFound(`no key ${command.keyId} on this account`);
      // Revoking twice is harmless: the key is revoked either way.
      if (key.revoked) return [];
      return [event('ApiKeyRevoked', { keyId: command.keyId, revokedAt: command.now })];
    }
    case 'GrantCredits':
      return [event('CreditsGranted', { mode: command.mode, amount: command.amount, grantedAt: command.now })];
    default:
      return assertNever(command);
  }
}

export function evolve(state: AccountState, event: AccountEvent): AccountState {
  if (event.type === 'AccountOpened') {
    const d = event.data;
    return {
      status: 'open',
      id: d.accountId,
      name: d.name,
      credits: { ...d.credits },
      oauthRedirectUris: d.oauthRedirectUris ?? [],
      keys: {},
      createdAt: d.openedAt,
    };
  }
  if (state.status === 'none') return state;
  switch (event.type) {
    case 'AccountSettingsChanged':
      return { ...state, name: event.data.name ?? state.name, oauthRedirectUris: event.data.oauthRedirectUris ?? state.oauthRedirectUris };
    case 'ApiKeyIssued':
      return { ...state, keys: { ...state.keys, [event.data.keyId]: { mode: event.data.mode, revoked: false } } };
    case 'ApiKeyRevoked':
      return { ...state, keys: { ...state.keys, [event.data.keyId]: { ...state.keys[event.data.keyId], revoked: true } } };
    case 'CreditsGranted':
      return { ...state, credits: { ...state.credits, [event.data.mode]: state.credits[event.data.mode] + event.data.amount } };
    default:
      return assertNever(event);
  }
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((item, i) => item === b[i]);

export const accountDecider: Decider<AccountCommand, AccountEvent, AccountState> = { initialState: { status: 'none' }, decide, evolve };

export const upcastAccountEvent = ACCOUNT_EVENTS.upcast;

/** Credits an account event grants, each with an id derived from the event, so applying twice counts once. */
export interface CreditGrant {
  grantId: string;
  mode: Mode;
  amount: number;
}

/** `event` as stored (its metadata holds the version), so an older version is read as the current one. */
export function creditGrantsOf(event: { id: string; type: string; data: Record<string, unknown>; metadata?: Record<string, unknown> }): CreditGrant[] {
  if (event.type !== 'AccountOpened' && event.type !== 'CreditsGranted') return [];
  const current = upcastAccountEvent(event.type, event.data, storedVersion(event.metadata)) as AccountOpened | CreditsGranted;
  if (current.type === 'AccountOpened') {
    const credits = current.data.credits;
    return MODES.filter((mode) => credits[mode] > 0).map((mode) => ({ grantId: `${event.id}:${mode}`, mode, amount: credits[mode] }));
  }
  return [{ grantId: event.id, mode: current.data.mode, amount: current.data.amount }];
}
