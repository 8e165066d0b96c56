import { assertNever, Decider, DomainEvent, DomainRuleViolation } from '@campaign-ops/decider';

export type KeyMode = 'live' | 'test';
export const KEY_MODES: readonly KeyMode[] = ['live', 'test'];
export const DEFAULT_STARTING_CREDITS = 1000;

export type AccountOpened = DomainEvent<'AccountOpened', { accountId: string; name: string; credits: Record<KeyMode, number>; openedAt: string }>;
export type ApiKeyIssued = DomainEvent<'ApiKeyIssued', { keyId: string; mode: KeyMode; keyHash: string; issuedAt: string }>;
export type ApiKeyRevoked = DomainEvent<'ApiKeyRevoked', { keyId: string; revokedAt: string }>;
export type CreditsGranted = DomainEvent<'CreditsGranted', { mode: KeyMode; amount: number; grantedAt: string }>;
export type AccountEvent = AccountOpened | ApiKeyIssued | ApiKeyRevoked | CreditsGranted;

export interface Account {
  id: string;
  name: string;
  credits: Record<KeyMode, number>;
  keys: Record<string, { mode: KeyMode; revoked: boolean }>;
  createdAt: string;
}
export type AccountState = { status: 'none' } | ({ status: 'open' } & Account);

export type AccountCommand =
  | { type: 'OpenAccount'; accountId: string; name: string; credits: number; now: string }
  | { type: 'IssueApiKey'; keyId: string; mode: KeyMode; keyHash: string; now: string }
  | { type: 'RevokeApiKey'; keyId: string; now: string }
  | { type: 'GrantCredits'; mode: KeyMode; amount: number; now: string };

export class AccountNotFound extends DomainRuleViolation {
  readonly rule = 'resource_missing';
}
export class AccountAlreadyOpen extends DomainRuleViolation {
  readonly rule = 'account_already_open';
}
export class ApiKeyNotFound extends DomainRuleViolation {
  readonly rule = 'resource_missing';
}

export const accountStreamId = (accountId: string) => `account-${accountId}`;

export function decide(command: AccountCommand, state: AccountState): AccountEvent[] {
  if (command.type === 'OpenAccount') {
    if (state.status === 'open') throw new AccountAlreadyOpen(`account ${command.accountId} exists`);
    return [
      {
        type: 'AccountOpened',
        version: 1,
        data: { accountId: command.accountId, name: command.name, credits: { live: command.credits, test: command.credits }, openedAt: command.now },
      },
    ];
  }
  if (state.status === 'none') throw new AccountNotFound('no such account');
  switch (command.type) {
    case 'IssueApiKey':
      return [{ type: 'ApiKeyIssued', version: 1, data: { keyId: command.keyId, mode: command.mode, keyHash: command.keyHash, issuedAt: command.now } }];
    case 'RevokeApiKey': {
      const key = state.keys[command.keyId];
      if (!key) throw new ApiKeyNotFound(`no key ${command.keyId} on this account`);
      // Revoking twice is harmless: the key is revoked either way.
      if (key.revoked) return [];
      return [{ type: 'ApiKeyRevoked', version: 1, data: { keyId: command.keyId, revokedAt: command.now } }];
    }
    case 'GrantCredits':
      return [{ type: 'CreditsGranted', version: 1, data: { mode: command.mode, amount: command.amount, grantedAt: command.now } }];
    default:
      return assertNever(command);
  }
}

export function evolve(state: AccountState, event: AccountEvent): AccountState {
  if (event.type === 'AccountOpened') {
    return { status: 'open', id: event.data.accountId, name: event.data.name, credits: { ...event.data.credits }, keys: {}, createdAt: event.data.openedAt };
  }
  if (state.status === 'none') return state;
  switch (event.type) {
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

export const accountDecider: Decider<AccountCommand, AccountEvent, AccountState> = { initialState: { status: 'none' }, decide, evolve };

const ACCOUNT_EVENT_TYPES = ['AccountOpened', 'ApiKeyIssued', 'ApiKeyRevoked', 'CreditsGranted'];
export function upcastAccountEvent(type: string, data: Record<string, unknown>, version: number): AccountEvent {
  if (!ACCOUNT_EVENT_TYPES.includes(type) || version !== 1) throw new Error(`cannot read account event ${type} v${version}`);
  return { type, version, data } as AccountEvent;
}

/** Credits an account event grants, each with an id derived from the event, so applying twice counts once. */
export interface CreditGrant {
  grantId: string;
  mode: KeyMode;
  amount: number;
}

export function creditGrantsOf(event: { id: string; type: string; data: Record<string, unknown> }): CreditGrant[] {
  if (event.type === 'AccountOpened') {
    const credits = (event.data as AccountOpened['data']).credits;
    return KEY_MODES.filter((mode) => credits[mode] > 0).map((mode) => ({ grantId: `${event.id}:${mode}`, mode, amount: credits[mode] }));
  }
  if (event.type === 'CreditsGranted') {
    const { mode, amount } = event.data as CreditsGranted['data'];
    return [{ grantId: event.id, mode, amount }];
  }
  return [];
}
