import type { Mode } from '@campaign-ops/account-domain';
/** The events partners can subscribe to (docs/api.md#webhooks-and-signatures). */
export const WEBHOOK_EVENT_TYPES = ['dispatch.accepted', 'dispatch.completed', 'dispatch.failed', 'connection.active', 'connection.reauth_required'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
export const isWebhookEventType = (value: unknown): value is WebhookEventType =>
  typeof value === 'string' && (WEBHOOK_EVENT_TYPES as readonly string[]).includes(value);

/**
 * An event on its way to partners: published on the bus by the service that owns it, stored for
 * the Events API, and fanned out to endpoints. `accountId` and `mode` route it; they are never
 * part of the body partners receive.
 */
export interface PartnerEvent {
  id: string;
  event: WebhookEventType;
  timestamp: string;
  data: Record<string, unknown>;
  accountId: string;
  mode: Mode;
}

/** The subject partner events travel on. */
export const partnerEventSubject = (event: WebhookEventType): string => `evt.partner.${event.replace('.', '_')}`;
export const PARTNER_EVENT_SUBJECTS = 'evt.partner.>';

/** The exact body partners receive: the field order is part of the contract they sign. */
export const webhookBody = (e: Pick<PartnerEvent, 'id' | 'event' | 'timestamp' | 'data'>): string =>
  JSON.stringify({ id: e.id, event: e.event, timestamp: e.timestamp, data: e.data });

/**
 * Where the services that own events hand their partner events: the bus (to the fan-out of
 * webhook-delivery-service, de-duplicated by `msgId`), or, when the fan-out runs in the same
 * process (standalone), the fan-out itself, so that the event crosses no second durable log.
 * Either way it must be idempotent: a relay repeats the events since its checkpoint after a crash.
 */
export interface PartnerEventSink {
  accept(event: PartnerEvent, msgId: string): Promise<void>;
}

/** The token under which the fan-out offers itself as the sink, in a process that has it. */
export const PARTNER_EVENT_SINK = Symbol('PARTNER_EVENT_SINK');

/** The sink that publishes on the bus, on the event's subject. */
export const partnerEventsOnBus = (bus: { publish(subject: string, data: PartnerEvent, options: { msgId: string }): Promise<unknown> }): PartnerEventSink => ({
  accept: async (event, msgId) => void (await bus.publish(partnerEventSubject(event.event), event, { msgId })),
});
