import { decideAll } from '@campaign-ops/decider';
import { documentsAfter } from '@campaign-ops/event-sourcing';
import { WebhookEndpointCommand, webhookEndpointDecider } from '@campaign-ops/webhook-domain';
import { webhookEndpointsProjection } from './endpoint-store';

describe('the webhook_endpoints projection', () => {
  const created: WebhookEndpointCommand = {
    type: 'CreateEndpoint',
    endpointId: 'whk_1',
    accountId: 'acct_1',
    mode: 'test',
    url: 'https://hooks.example.com/a',
    events: ['dispatch.completed'],
    sealedSecret: 'sealed',
    now: '2026-12-01T08:00:00.000Z',
  };

  it('given an endpoint created then updated, then one document with the update and its sealed secret', () => {
    const given = decideAll(webhookEndpointDecider, [
      created,
      { type: 'UpdateEndpoint', url: 'https://hooks.example.com/b', enabled: false, now: '2026-12-01T09:00:00.000Z' },
    ]);
    expect(documentsAfter(webhookEndpointsProjection, 'webhook-whk_1', given)).toEqual([
      {
        collection: 'webhook_endpoints',
        doc: expect.objectContaining({
          id: 'whk_1',
          account_id: 'acct_1',
          mode: 'test',
          url: 'https://hooks.example.com/b',
          enabled: false,
          deleted: false,
          sealed_secret: 'sealed',
          updated_at: '2026-12-01T09:00:00.000Z',
        }),
      },
    ]);
  });

  it('given the endpoint deleted, then its document is kept, marked deleted', () => {
    const given = decideAll(webhookEndpointDecider, [created, { type: 'DeleteEndpoint', now: '2026-12-02T08:00:00.000Z' }]);
    expect(documentsAfter(webhookEndpointsProjection, 'webhook-whk_1', given)[0].doc).toMatchObject({ id: 'whk_1', deleted: true });
  });
});
