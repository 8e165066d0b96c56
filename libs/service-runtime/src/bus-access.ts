import { BusAccess, NatsUser, operatorPermissions, passwordVariableOf, renderNatsAuthorization, servicePermissions } from '@campaign-ops/adapters/bus';
import { SUBJECTS } from '@campaign-ops/service-messages';
import type { AppName } from './config';

export type BusService = Exclude<AppName, 'standalone' | 'ops-cli'>;

/** The NATS user of ops-cli (the operators): the streams' set-up and the parked messages. */
export const OPERATOR_NATS_USER = 'ops';

const PARTNER_EVENTS = {
  dispatch: ['evt.partner.dispatch_accepted', 'evt.partner.dispatch_completed', 'evt.partner.dispatch_failed'],
  connection: ['evt.partner.connection_active', 'evt.partner.connection_reauth_required'],
};

/** What each service answers the gateway (partners' and operators' requests). */
const DISPATCH_API = [
  SUBJECTS.dispatchCreate,
  SUBJECTS.dispatchValidate,
  SUBJECTS.dispatchGet,
  SUBJECTS.dispatchList,
  SUBJECTS.dispatchRetry,
  SUBJECTS.dispatchEvents,
];
const CREDITS_API = [SUBJECTS.creditsGrant, SUBJECTS.creditsBalances];
const CONNECTION_API = [
  SUBJECTS.connectionCreate,
  SUBJECTS.connectionList,
  SUBJECTS.connectionGet,
  SUBJECTS.connectionDelete,
  SUBJECTS.connectionReauthorize,
  SUBJECTS.connectionOAuthCallback,
];
const WEBHOOK_API = [
  SUBJECTS.webhookCreate,
  SUBJECTS.webhookList,
  SUBJECTS.webhookGet,
  SUBJECTS.webhookUpdate,
  SUBJECTS.webhookDelete,
  SUBJECTS.webhookRotateSecret,
  SUBJECTS.webhookDeliveries,
  SUBJECTS.webhookRedeliver,
];
const EVENTS_API = [SUBJECTS.eventsList, SUBJECTS.eventsGet];
/** What connection-service answers dispatch-service alone: a token, the connection a launch uses, a refused token. */
const CONNECTION_INTERNAL = [SUBJECTS.connectionResolve, SUBJECTS.connectionAccess, SUBJECTS.connectionReauthRequired];

/**
 * Every service's use of the bus, and so its NATS permissions (k8s/datastores/nats-auth.conf is
 * rendered from this). A service may call only what it is listed to call: the gateway, on the
 * internet, never asks for a token (`svc.connection.access` is dispatch-service's alone) and never
 * joins a queue group. The manifests' spec checks `serves`, `requests` and `consumes` against the
 * code of each app; the end-to-end tests run the apps on a nats-server with these permissions, so a
 * call left out here fails there.
 */
export const BUS_ACCESS: Record<BusService, BusAccess> = {
  'api-gateway': {
    serves: [],
    requests: [...DISPATCH_API, ...CONNECTION_API, ...WEBHOOK_API, ...CREDITS_API, ...EVENTS_API],
    // Account events that grant credits, for dispatch-service's credit ledgers.
    publishes: ['evt.account.>'],
    consumes: [],
  },
  'dispatch-service': {
    serves: [...DISPATCH_API, ...CREDITS_API],
    requests: CONNECTION_INTERNAL,
    publishes: ['evt.dispatch.>', ...PARTNER_EVENTS.dispatch],
    consumes: [
      { durable: 'dispatch-executor', subject: 'evt.dispatch.>' },
      { durable: 'credit-grants', subject: 'evt.account.>' },
    ],
  },
  'connection-service': {
    serves: [...CONNECTION_API, ...CONNECTION_INTERNAL],
    requests: [],
    publishes: PARTNER_EVENTS.connection,
    consumes: [],
  },
  'webhook-delivery-service': {
    serves: [...WEBHOOK_API, ...EVENTS_API],
    requests: [],
    publishes: [],
    consumes: [{ durable: 'webhook-fan-out', subject: 'evt.partner.>' }],
  },
};

export const isBusService = (app: AppName): app is BusService => app in BUS_ACCESS;

/** The users of k8s/datastores/nats-auth.conf: one per service, and the operators'. */
export function natsUsers(): NatsUser[] {
  const services = (Object.keys(BUS_ACCESS) as BusService[]).map((user) => ({
    user,
    passwordVariable: passwordVariableOf(user),
    permissions: servicePermissions(user, BUS_ACCESS[user]),
  }));
  return [
    ...services,
    { user: OPERATOR_NATS_USER, passwordVariable: passwordVariableOf(OPERATOR_NATS_USER), permissions: operatorPermissions(OPERATOR_NATS_USER) },
  ];
}

/** k8s/datastores/nats-auth.conf, as `ops bus authorization` prints it. */
export function natsAuthorizationFile(): string {
  return renderNatsAuthorization(natsUsers(), [
    'NATS users and permissions: one user per service, allowed only the subjects its code serves,',
    'calls, publishes and consumes; `ops` for the operators (streams, parked messages).',
    'Rendered from libs/service-runtime/src/bus-access.ts: do not edit, regenerate with',
    '  npm run build && npm run ops -- bus authorization > k8s/datastores/nats-auth.conf',
    'Passwords come from the environment of nats-server (the campaign-ops-nats Secret):',
    ...natsUsers().map(({ user, passwordVariable }) => `  ${passwordVariable} for ${user}`),
  ]);
}
