import { join } from 'node:path';
import { fold } from '@campaign-ops/decider';
import { describeEventFixtures, fixtureEvent } from '@campaign-ops/testing/decider';
import { ACCOUNT_EVENTS, AccountCommand, accountDecider, AccountEvent, AccountState, creditGrantsOf } from './account.decider';

const T = '2026-11-25T04:20:00.000Z';
const dir = join(__dirname, 'fixtures/events/account');
const stored = (name: string) => fixtureEvent(ACCOUNT_EVENTS, dir, name);
const opened = stored('AccountOpened.v1');
const issued = stored('ApiKeyIssued.v1') as Extract<AccountEvent, { type: 'ApiKeyIssued' }>;
const decided = (history: AccountEvent[], command: AccountCommand) => accountDecider.decide(command, fold(accountDecider, history))[0];

describeEventFixtures<AccountEvent, AccountState>({
  versions: ACCOUNT_EVENTS,
  dir,
  evolve: accountDecider.evolve,
  stateBefore: (type) => fold(accountDecider, type === 'AccountOpened' ? [] : type === 'ApiKeyRevoked' ? [opened, issued] : [opened]),
  written: {
    'AccountOpened.v1': decided([], { type: 'OpenAccount', accountId: 'acct_1', name: 'A', credits: 10, now: T }),
    'AccountOpened.v1.redirect-uris': decided([], {
      type: 'OpenAccount',
      accountId: 'acct_1',
      name: 'A',
      credits: 10,
      oauthRedirectUris: ['https://a.example/back'],
      now: T,
    }),
    'AccountSettingsChanged.v1': decided([opened], { type: 'ChangeAccountSettings', oauthRedirectUris: ['https://a.example/back'], now: T }),
    'AccountSettingsChanged.v1.name': decided([opened], { type: 'ChangeAccountSettings', name: 'Renamed', now: T }),
    'ApiKeyIssued.v1': decided([opened], { type: 'IssueApiKey', keyId: 'key_1', mode: 'live', keyHash: 'h', now: T }),
    'ApiKeyRevoked.v1': decided([opened, issued], { type: 'RevokeApiKey', keyId: issued.data.keyId, now: T }),
    'CreditsGranted.v1': decided([opened], { type: 'GrantCredits', mode: 'test', amount: 5, now: T }),
  },
});

describe('credit grants of stored account events', () => {
  it('reads the version in the metadata: a version this code does not know is refused, not guessed at', () => {
    const event = { id: 'evt_1', type: 'CreditsGranted', data: { mode: 'live', amount: 7, grantedAt: T } };
    expect(creditGrantsOf({ ...event, metadata: { version: 1 } })).toEqual([{ grantId: 'evt_1', mode: 'live', amount: 7 }]);
    expect(() => creditGrantsOf({ ...event, metadata: { version: 2 } })).toThrow('cannot read account event CreditsGranted v2');
  });
});
