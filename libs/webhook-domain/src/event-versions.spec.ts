import { join } from 'node:path';
import { fold } from '@campaign-ops/decider';
import { describeEventFixtures, fixtureEvent } from '@campaign-ops/testing/decider';
import {
  WEBHOOK_ENDPOINT_EVENTS,
  WebhookEndpointCommand,
  webhookEndpointDecider,
  WebhookEndpointEvent,
  WebhookEndpointState,
} from './webhook-endpoint.decider';

const T = '2026-11-25T04:20:00.000Z';
const dir = join(__dirname, 'fixtures/events/webhook-endpoint');
const created = fixtureEvent(WEBHOOK_ENDPOINT_EVENTS, dir, 'WebhookEndpointCreated.v1');
const decided = (command: WebhookEndpointCommand) => webhookEndpointDecider.decide(command, fold(webhookEndpointDecider, [created]))[0];

describeEventFixtures<WebhookEndpointEvent, WebhookEndpointState>({
  versions: WEBHOOK_ENDPOINT_EVENTS,
  dir,
  evolve: webhookEndpointDecider.evolve,
  stateBefore: (type) => fold(webhookEndpointDecider, type === 'WebhookEndpointCreated' ? [] : [created]),
  written: {
    'WebhookEndpointCreated.v1': webhookEndpointDecider.decide(
      {
        type: 'CreateEndpoint',
        endpointId: 'whk_1',
        accountId: 'acct_1',
        mode: 'live',
        url: 'https://x.example',
        events: ['dispatch.failed'],
        sealedSecret: 's',
        now: T,
      },
      webhookEndpointDecider.initialState,
    )[0],
    // The fixture records an update that names its events and enables the endpoint (the fields an update may hold, given).
    'WebhookEndpointUpdated.v1': decided({ type: 'UpdateEndpoint', events: ['dispatch.completed'], enabled: true, now: T }),
    'WebhookSecretRotated.v1': decided({ type: 'RotateSecret', sealedSecret: 's2', now: T }),
    'WebhookEndpointDisabled.v1': decided({ type: 'DisableEndpoint', reason: 'failing', now: T }),
    'WebhookEndpointDeleted.v1': decided({ type: 'DeleteEndpoint', now: T }),
  },
});
