import { Inject, Injectable } from '@nestjs/common';
import { failure, Outcome, success } from '@campaign-ops/api-errors';
import {
  Account,
  ApiKeyIssued,
  CreditGrant,
  creditGrantsOf,
  AccountCommand,
  accountDecider,
  AccountEvent,
  AccountNotFound,
  AccountState,
  accountStreamId,
  ACCOUNT_STREAM_PREFIX,
  ApiKeyNotFound,
  DEFAULT_STARTING_CREDITS,
  generateApiKey,
  hashApiKey,
  Mode,
  looksLikeApiKey,
  upcastAccountEvent,
} from '@campaign-ops/account-domain';
import { AggregateRepository, LiveProjection, Projection, toDomainEvent } from '@campaign-ops/event-sourcing';
import { EVENT_STORE, EventStore } from '@campaign-ops/event-store';
import { newId } from '@campaign-ops/ids';
import { Collection, READ_STORE, ReadStore } from '@campaign-ops/read-store';

export interface AccountView {
  id: string;
  name: string;
  credits: Record<Mode, number>;
  oauth_redirect_uris: string[];
  created_at: string;
  [key: string]: unknown;
}

export interface ApiKeyView {
  id: string;
  account_id: string;
  mode: Mode;
  key_hash: string;
  revoked: boolean;
  created_at: string;
  [key: string]: unknown;
}

export type AccountResource = Pick<AccountView, 'id' | 'name' | 'credits' | 'oauth_redirect_uris' | 'created_at'>;
export interface IssuedKey {
  id: string;
  key: string;
  mode: Mode;
  account_id: string;
  created_at: string;
}

export type Authentication = { ok: true; accountId: string; mode: Mode; keyId: string } | { ok: false; code: 'api_key_invalid' | 'api_key_revoked' };

/** The `accounts` and `api_keys` documents of an open account (also what a rebuild writes), its keys in the order issued. */
export function toAccountViews(state: Account, issued: ReadonlyArray<ApiKeyIssued['data']>): { account: AccountView; keys: ApiKeyView[] } {
  return {
    account: { id: state.id, name: state.name, credits: state.credits, oauth_redirect_uris: state.oauthRedirectUris, created_at: state.createdAt },
    keys: issued.map(({ keyId, mode, keyHash, issuedAt }) => ({
      id: keyId,
      account_id: state.id,
      mode,
      key_hash: keyHash,
      revoked: state.keys[keyId].revoked,
      created_at: issuedAt,
    })),
  };
}

/** An account's state, and its keys' issue events (the api_keys documents are made from them). */
export interface AccountFold {
  state: AccountState;
  issued: Array<ApiKeyIssued['data']>;
}

/** The `accounts` and `api_keys` read models: an open account's document, and one per key it issued. */
export const accountsProjection: Projection<AccountFold> = {
  name: 'accounts',
  streamPrefix: ACCOUNT_STREAM_PREFIX,
  collections: [
    { name: 'accounts', readMostly: true },
    { name: 'api_keys', indexes: ['key_hash', 'account_id'], readMostly: true },
  ],
  processor: { name: 'account-views', reacts: false },
  documentId: (streamId) => streamId.slice(ACCOUNT_STREAM_PREFIX.length),
  initialState: () => ({ state: accountDecider.initialState, issued: [] }),
  evolve: ({ state, issued }, event) => {
    const domain = toDomainEvent<AccountEvent>(event, upcastAccountEvent);
    return { state: accountDecider.evolve(state, domain), issued: domain.type === 'ApiKeyIssued' ? [...issued, domain.data] : issued };
  },
  documents: ({ state, issued }) => {
    if (state.status === 'none') return [];
    const views = toAccountViews(state as Account, issued);
    return [{ collection: 'accounts', doc: views.account }, ...views.keys.map((doc) => ({ collection: 'api_keys', doc }))];
  },
};

// A view written before redirect URIs existed has none.
const toResource = (v: AccountView): AccountResource => ({
  id: v.id,
  name: v.name,
  credits: v.credits,
  oauth_redirect_uris: v.oauth_redirect_uris ?? [],
  created_at: v.created_at,
});

/**
 * Accounts and their API keys: opened, issued and revoked through the Admin API and the ops
 * command line, and looked up by the gateway for every request. Keys are kept only as hashes.
 */
@Injectable()
export class AccountDirectory {
  private readonly repository: AggregateRepository<AccountCommand, AccountEvent, AccountState>;
  readonly live: LiveProjection<AccountFold>;
  readonly accounts: Collection<AccountView>;
  readonly keys: Collection<ApiKeyView>;

  constructor(@Inject(EVENT_STORE) events: EventStore, @Inject(READ_STORE) readStore: ReadStore) {
    this.repository = new AggregateRepository(events, accountDecider, upcastAccountEvent);
    this.live = new LiveProjection(accountsProjection, events, readStore);
    this.accounts = this.live.collection<AccountView>('accounts');
    this.keys = this.live.collection<ApiKeyView>('api_keys');
  }

  /** Opens an account; its starting credits are grants that dispatch-service's ledgers apply. */
  async openAccount(
    name: string,
    credits = DEFAULT_STARTING_CREDITS,
    oauthRedirectUris: string[] = [],
  ): Promise<{ account: AccountResource; grants: CreditGrant[] }> {
    const accountId = newId('acct');
    const grants = await this.run(accountId, { type: 'OpenAccount', accountId, name, credits, oauthRedirectUris, now: new Date().toISOString() });
    return { account: toResource((await this.accounts.get(accountId))!), grants };
  }

  /** An operator's change of the account's name or OAuth redirect URIs (what is given replaces what it has). */
  async changeSettings(accountId: string, settings: { name?: string; oauthRedirectUris?: string[] }): Promise<Outcome<AccountResource>> {
    try {
      await this.run(accountId, { type: 'ChangeAccountSettings', ...settings, now: new Date().toISOString() });
    } catch (error) {
      if (error instanceof AccountNotFound) return failure('resource_missing', `No such account: ${accountId}`, 'id');
      throw error;
    }
    return success(toResource((await this.accounts.get(accountId))!));
  }

  async issueKey(accountId: string, mode: Mode): Promise<Outcome<IssuedKey>> {
    const keyId = newId('key');
    const { key, hash } = generateApiKey(mode);
    const now = new Date().toISOString();
    try {
      await this.run(accountId, { type: 'IssueApiKey', keyId, mode, keyHash: hash, now });
    } catch (error) {
      if (error instanceof AccountNotFound) return failure('resource_missing', `No such account: ${accountId}`, 'id');
      throw error;
    }
    return success({ id: keyId, key, mode, account_id: accountId, created_at: now });
  }

  async revokeKey(keyId: string): Promise<Outcome<{ id: string; revoked: true }>> {
    const key = await this.keys.get(keyId);
    if (!key) return failure('resource_missing', `No such key: ${keyId}`, 'id');
    try {
      await this.run(key.account_id, { type: 'RevokeApiKey', keyId, now: new Date().toISOString() });
    } catch (error) {
      if (error instanceof ApiKeyNotFound) return failure('resource_missing', `No such key: ${keyId}`, 'id');
      throw error;
    }
    return success({ id: keyId, revoked: true });
  }

  async grantCredits(accountId: string, mode: Mode, amount: number): Promise<Outcome<{ account: AccountResource; grants: CreditGrant[] }>> {
    let grants: CreditGrant[];
    try {
      grants = await this.run(accountId, { type: 'GrantCredits', mode, amount, now: new Date().toISOString() });
    } catch (error) {
      if (error instanceof AccountNotFound) return failure('resource_missing', `No such account: ${accountId}`, 'id');
      throw error;
    }
    return success({ account: toResource((await this.accounts.get(accountId))!), grants });
  }

  async account(accountId: string): Promise<AccountResource | null> {
    const view = await this.accounts.get(accountId);
    return view && toResource(view);
  }

  async authenticate(presented: string): Promise<Authentication> {
    if (!looksLikeApiKey(presented)) return { ok: false, code: 'api_key_invalid' };
    const found = await this.keys.find({ key_hash: hashApiKey(presented) }, { limit: 1 });
    const key = found.items[0];
    if (!key) return { ok: false, code: 'api_key_invalid' };
    if (key.revoked) return { ok: false, code: 'api_key_revoked' };
    return { ok: true, accountId: key.account_id, mode: key.mode, keyId: key.id };
  }

  /** Brings the account's views up to its stream (read-your-writes after a command; the projection does it again, changing nothing). */
  async refreshViews(streamId: string): Promise<void> {
    await this.live.refresh(streamId);
  }

  /** Runs a command; answers the credit grants its events make. */
  private async run(accountId: string, command: AccountCommand): Promise<CreditGrant[]> {
    const { recorded } = await this.repository.execute(accountStreamId(accountId), command, { accountId });
    await this.refreshViews(accountStreamId(accountId));
    return recorded.flatMap(creditGrantsOf);
  }
}
