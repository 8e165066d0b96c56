import { join } from 'node:path';
import { fold } from '@campaign-ops/decider';
import { describeEventFixtures, fixtureEvent } from '@campaign-ops/testing/decider';
import { CONNECTION_EVENTS, ConnectionCommand, connectionDecider, ConnectionEvent, ConnectionState } from './connection.decider';

const T = '2026-11-25T04:20:00.000Z';
const dir = join(__dirname, 'fixtures/events/connection');
const stored = (name: string) => fixtureEvent(CONNECTION_EVENTS, dir, name);
const requested = stored('ConnectionRequested.v1') as Extract<ConnectionEvent, { type: 'ConnectionRequested' }>;
const activated = stored('ConnectionActivated.v1');
const reauthRequired = stored('ReauthRequired.v1');
const decided = (history: ConnectionEvent[], command: ConnectionCommand) => connectionDecider.decide(command, fold(connectionDecider, history))[0];
const identity = { connectionId: 'con_1', accountId: 'acct_1', mode: 'live', channel: 'meta_ads', providerAccountId: 'act_1' } as const;
const credentials = { scopes: ['ads_read'], account: { currency: 'USD', timezone: 'UTC' }, expiresAt: null, now: T };
const round = { stateHash: 'h2', redirectUri: 'https://partner.example/back', expiresAt: '2026-11-25T05:00:00.000Z' };

describeEventFixtures<ConnectionEvent, ConnectionState>({
  versions: CONNECTION_EVENTS,
  dir,
  evolve: connectionDecider.evolve,
  stateBefore: (type) => {
    if (type === 'ConnectionRequested') return connectionDecider.initialState;
    if (type === 'ConnectionActivated') return fold(connectionDecider, [requested]);
    return fold(connectionDecider, type === 'ConnectionReauthorized' ? [requested, activated, reauthRequired] : [requested, activated]);
  },
  written: {
    'ConnectionRequested.v1': decided([], { type: 'StartOAuth', ...identity, scopes: ['ads_read'], oauth: round, now: T }),
    'ConnectionActivated.v1': decided([], { type: 'ImportToken', ...identity, ...credentials, sandbox: false }),
    'OAuthRoundStarted.v1': decided([requested, activated], { type: 'StartReauthorization', oauth: round, now: T }),
    'TokenRefreshed.v1': decided([requested, activated], { type: 'RefreshToken', expiresAt: null, now: T }),
    'ReauthRequired.v1': decided([requested, activated], { type: 'RequireReauth', reason: 'invalid_grant', now: T }),
    'ConnectionReauthorized.v1': decided([requested, activated, reauthRequired], { type: 'Reauthorize', ...credentials }),
    'ConnectionRevoked.v1': decided([requested, activated], { type: 'Revoke', reason: 'deleted', now: T }),
  },
});
