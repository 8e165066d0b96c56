import { assertNever, Decider, DomainEvent, DomainRuleViolation, eventVersions } from '@campaign-ops/decider';
import { WebhookEventType } from './webhook-events';

import type { Mode } from '@campaign-ops/account-domain';

export type WebhookEndpointCreated = DomainEvent<
  'WebhookEndpointCreated',
  { endpointId: string; accountId: string; mode: Mode; url: string; events: WebhookEventType[]; sealedSecret: string; createdAt: string }
>;
export type WebhookEndpointUpdated = DomainEvent<'WebhookEndpointUpdated', { url?: string; events?: WebhookEventType[]; enabled?: boolean; updatedAt: string }>;
export type WebhookSecretRotated = DomainEvent<'WebhookSecretRotated', { sealedSecret: string; rotatedAt: string }>;
export type WebhookEndpointDisabled = DomainEvent<'WebhookEndpointDisabled', { reason: string; disabledAt: string }>;
export type WebhookEndpointDeleted = DomainEvent<'WebhookEndpointDeleted', { deletedAt: string }>;
export type WebhookEndpointEvent = WebhookEndpointCreated | WebhookEndpointUpdated | WebhookSecretRotated | WebhookEndpointDisabled | WebhookEndpointDeleted;

/** Each type's upcasters from its older versions, oldest first (docs/architecture.md, "Event versioning"); all are still at version 1. */
export const WEBHOOK_ENDPOINT_EVENTS = eventVersions<WebhookEndpointEvent>('webhook endpoint', {
  WebhookEndpointCreated: [],
  WebhookEndpointUpdated: [],
  WebhookSecretRotated: [],
  WebhookEndpointDisabled: [],
  WebhookEndpointDeleted: [],
});
const event = WEBHOOK_ENDPOINT_EVENTS.event;

export interface WebhookEndpoint {
  id: string;
  accountId: string;
  mode: Mode;
  url: string;
  events: WebhookEventType[];
  sealedSecret: string;
  enabled: boolean;
  disabledReason: string | null;
  deleted: boolean;
  createdAt: string;
  updatedAt: string;
}
export type WebhookEndpointState = { status: 'none' } | ({ status: 'exists' } & WebhookEndpoint);

export type WebhookEndpointCommand =
  | { type: 'CreateEndpoint'; endpointId: string; accountId: string; mode: Mode; url: string; events: WebhookEventType[]; sealedSecret: string; now: string }
  | { type: 'UpdateEndpoint'; url?: string; events?: WebhookEventType[]; enabled?: boolean; now: string }
  | { type: 'RotateSecret'; sealedSecret: string; now: string }
  | { type: 'DisableEndpoint'; reason: string; now: string }
  | { type: 'DeleteEndpoint'; now: string };

export class EndpointNotFound extends DomainRuleViolation {
  readonly rule = 'resource_missing';
}
export class EndpointAlreadyExists extends DomainRuleViolation {
  readonly rule = 'endpoint_already_exists';
}

/** At most this many endpoints (not deleted) per account and mode, so a fan-out stays bounded. */
export const MAX_ENDPOINTS_PER_ACCOUNT = 50;

export const WEBHOOK_STREAM_PREFIX = 'webhook-';
export const webhookStreamId = (endpointId: string) => `${WEBHOOK_STREAM_PREFIX}${endpointId}`;

export function decide(command: WebhookEndpointCommand, state: WebhookEndpointState): WebhookEndpointEvent[] {
  if (command.type === 'CreateEndpoint') {
    if (state.status === 'exists') throw new EndpointAlreadyExists(`endpoint ${command.endpointId} exists`);
    const { endpointId, accountId, mode, url, events, sealedSecret, now } = command;
    return [event('WebhookEndpointCreated', { endpointId, accountId, mode, url, events, sealedSecret, createdAt: now })];
  }
  // A deleted endpoint is gone for partners: every later command finds nothing.
  if (state.status === 'none' || state.deleted) throw new EndpointNotFound('no such webhook endpoint');
  switch (command.type) {
    case 'UpdateEndpoint': {
      const { url, events, enabled, now } = command;
      return [
        event('WebhookEndpointUpdated', {
          ...(url !== undefined && { url }),
          ...(events !== undefined && { events }),
          ...(enabled !== undefined && { enabled }),
          updatedAt: now,
        }),
      ];
    }
    case 'RotateSecret':
      return [event('WebhookSecretRotated', { sealedSecret: command.sealedSecret, rotatedAt: command.now })];
    case 'DisableEndpoint':
      if (!state.enabled) return [];
      return [event('WebhookEndpointDisabled', { reason: command.reason, disabledAt: command.now })];
    case 'DeleteEndpoint':
      return [event('WebhookEndpointDeleted', { deletedAt: command.now })];
    default:
      return assertNever(command);
  }
}

export function evolve(state: WebhookEndpointState, event: WebhookEndpointEvent): WebhookEndpointState {
  if (event.type === 'WebhookEndpointCreated') {
    const d = event.data;
    return {
      status: 'exists',
      id: d.endpointId,
      accountId: d.accountId,
      mode: d.mode,
      url: d.url,
      events: d.events,
      sealedSecret: d.sealedSecret,
      enabled: true,
      disabledReason: null,
      deleted: false,
      createdAt: d.createdAt,
      updatedAt: d.createdAt,
    };
  }
  if (state.status === 'none') return state;
  switch (event.type) {
    case 'WebhookEndpointUpdated': {
      const { url, events, enabled, updatedAt } = event.data;
      return {
        ...state,
        ...(url !== undefined && { url }),
        ...(events !== undefined && { events }),
        ...(enabled !== undefined && { enabled, disabledReason: enabled ? null : state.disabledReason }),
        updatedAt,
      };
    }
    case 'WebhookSecretRotated':
      return { ...state, sealedSecret: event.data.sealedSecret, updatedAt: event.data.rotatedAt };
    case 'WebhookEndpointDisabled':
      return { ...state, enabled: false, disabledReason: event.data.reason, updatedAt: event.data.disabledAt };
    case 'WebhookEndpointDeleted':
      return { ...state, deleted: true, updatedAt: event.data.deletedAt };
    default:
      return assertNever(event);
  }
}

export const webhookEndpointDecider: Decider<WebhookEndpointCommand, WebhookEndpointEvent, WebhookEndpointState> = {
  initialState: { status: 'none' },
  decide,
  evolve,
};

export const upcastWebhookEndpointEvent = WEBHOOK_ENDPOINT_EVENTS.upcast;
