import type { Mode } from '@campaign-ops/account-domain';
import { AggregateRepository, LiveProjection, Projection, toDomainEvent } from '@campaign-ops/event-sourcing';
import { Inject, Injectable } from '@nestjs/common';
import { EVENT_STORE, EventStore } from '@campaign-ops/event-store';
import { Collection, READ_STORE, ReadStore } from '@campaign-ops/read-store';
import {
  upcastWebhookEndpointEvent,
  WEBHOOK_STREAM_PREFIX,
  WebhookEndpoint,
  WebhookEndpointCommand,
  webhookEndpointDecider,
  WebhookEndpointEvent,
  WebhookEndpointState,
  WebhookEventType,
} from '@campaign-ops/webhook-domain';

/** An endpoint as the `webhook_endpoints` read model keeps it; `sealed_secret` never leaves the service. */
export interface EndpointView {
  id: string;
  account_id: string;
  mode: Mode;
  url: string;
  events: WebhookEventType[];
  enabled: boolean;
  disabled_reason: string | null;
  deleted: boolean;
  sealed_secret: string;
  created_at: string;
  updated_at: string;
  [key: string]: unknown;
}

/** The endpoint as partners see it (docs/api.md#webhooks-and-signatures); the signing secret is added only where shown. */
export const toEndpointResource = (v: EndpointView) => ({
  id: v.id,
  url: v.url,
  events: v.events,
  enabled: v.enabled,
  disabled_reason: v.disabled_reason,
  created_at: v.created_at,
});
export type EndpointResource = ReturnType<typeof toEndpointResource>;

/** The `webhook_endpoints` document of an endpoint (also what a rebuild writes). */
export const toEndpointView = (e: WebhookEndpoint): EndpointView => ({
  id: e.id,
  account_id: e.accountId,
  mode: e.mode,
  url: e.url,
  events: e.events,
  enabled: e.enabled,
  disabled_reason: e.disabledReason,
  deleted: e.deleted,
  sealed_secret: e.sealedSecret,
  created_at: e.createdAt,
  updated_at: e.updatedAt,
});

/** The `webhook_endpoints` read model: one document per endpoint (deleted ones kept, marked). */
export const webhookEndpointsProjection: Projection<WebhookEndpointState> = {
  name: 'webhook_endpoints',
  streamPrefix: WEBHOOK_STREAM_PREFIX,
  // The compound index serves the fan-out's read of every partner event (an account's endpoints of a mode) exactly, statistics or not.
  collections: [{ name: 'webhook_endpoints', indexes: ['account_id', 'mode', 'enabled', 'deleted', ['account_id', 'mode']], readMostly: true }],
  processor: { name: 'webhook-endpoint-views', reacts: false },
  documentId: (streamId) => streamId.slice(WEBHOOK_STREAM_PREFIX.length),
  initialState: () => webhookEndpointDecider.initialState,
  evolve: (state, event) => webhookEndpointDecider.evolve(state, toDomainEvent(event, upcastWebhookEndpointEvent)),
  documents: (state) => (state.status === 'none' ? [] : [{ collection: 'webhook_endpoints', doc: toEndpointView(state) }]),
};

@Injectable()
export class EndpointStore {
  readonly repository: AggregateRepository<WebhookEndpointCommand, WebhookEndpointEvent, WebhookEndpointState>;
  readonly live: LiveProjection<WebhookEndpointState>;
  readonly views: Collection<EndpointView>;

  constructor(@Inject(EVENT_STORE) events: EventStore, @Inject(READ_STORE) readStore: ReadStore) {
    this.repository = new AggregateRepository(events, webhookEndpointDecider, upcastWebhookEndpointEvent);
    this.live = new LiveProjection(webhookEndpointsProjection, events, readStore);
    this.views = this.live.collection<EndpointView>('webhook_endpoints');
  }

  /** Brings the view up to the stream (read-your-writes after a command; the projection does it again, changing nothing); answers it. */
  async refreshView(streamId: string): Promise<EndpointView | null> {
    const refreshed = await this.live.refresh(streamId);
    return refreshed && refreshed.state.status !== 'none' ? toEndpointView(refreshed.state) : null;
  }

  /** An endpoint of this caller, or null: other accounts' and modes' endpoints do not exist for it. */
  async owned(id: string, accountId: string, mode: string): Promise<EndpointView | null> {
    const view = await this.views.get(id);
    return view && !view.deleted && view.account_id === accountId && view.mode === mode ? view : null;
  }
}
