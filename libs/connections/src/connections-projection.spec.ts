import { decideAll } from '@campaign-ops/decider';
import { ConnectionCommand, connectionDecider } from '@campaign-ops/connection-domain';
import { documentsAfter } from '@campaign-ops/event-sourcing';
import { connectionsProjection } from './connection-store';

describe('the connections projection', () => {
  const imported: ConnectionCommand = {
    type: 'ImportToken',
    connectionId: 'con_1',
    accountId: 'acct_1',
    mode: 'live',
    channel: 'meta_ads',
    providerAccountId: 'act_42',
    sandbox: false,
    scopes: ['ads_management'],
    account: { currency: 'EUR', timezone: 'Europe/Berlin' },
    expiresAt: '2027-01-01T00:00:00.000Z',
    now: '2026-12-01T08:00:00.000Z',
  };

  it('given an imported token, then an active connection with its tenancy', () => {
    const [document] = documentsAfter(connectionsProjection, 'connection-con_1', decideAll(connectionDecider, [imported]));
    expect(document).toMatchObject({
      collection: 'connections',
      doc: { id: 'con_1', account_id: 'acct_1', mode: 'live', channel: 'meta_ads', status: 'active', currency: 'EUR' },
    });
  });

  it('given the connection revoked, then its document says so (and the processor, which reacts, keeps its checkpoint through a rebuild)', () => {
    const given = decideAll(connectionDecider, [imported, { type: 'Revoke', reason: 'deleted', now: '2026-12-02T08:00:00.000Z' }]);
    expect(documentsAfter(connectionsProjection, 'connection-con_1', given)[0].doc).toMatchObject({ id: 'con_1', status: 'revoked' });
    expect(connectionsProjection.processor).toEqual({ name: 'connection-views', reacts: true });
  });
});
