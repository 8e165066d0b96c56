import { Account, AccountState, accountDecider, ApiKeyIssued, upcastAccountEvent } from '@campaign-ops/account-domain';
import { toAccountViews } from '@campaign-ops/accounts';
import { CONNECTION_STREAM_PREFIX, ConnectionState, connectionDecider, upcastConnectionEvent } from '@campaign-ops/connection-domain';
import { toView as toConnectionView, CONNECTION_VIEW_INDEXES } from '@campaign-ops/connections';
import {
  CREDIT_LEDGER_STREAM_PREFIX,
  CreditLedger,
  creditLedgerDecider,
  DISPATCH_STREAM_PREFIX,
  DispatchState,
  dispatchDecider,
  Mode,
  upcastCreditLedgerEvent,
  upcastDispatchEvent,
} from '@campaign-ops/dispatch-domain';
import { DISPATCH_VIEW_INDEXES, toLedgerView, toView as toDispatchView } from '@campaign-ops/dispatching';
import { toDomainEvent } from '@campaign-ops/event-sourcing';
import { ReplayedEvent } from '@campaign-ops/event-store';
import { Doc, RebuildSpec } from '@campaign-ops/read-store';
import { toEndpointView } from '@campaign-ops/webhook-delivery';
import { upcastWebhookEndpointEvent, WebhookEndpointState, webhookEndpointDecider } from '@campaign-ops/webhook-domain';

/**
 * A read model that is a pure function of its streams, so that replaying them rebuilds it: each
 * stream is folded on its own (`evolve`), and its state gives the documents it keeps (`documents`),
 * each stored with the stream's last revision, as the live projection stores them.
 */
export interface ReadModelDefinition<State = any> {
  /** What `ops rebuild <name>` names. */
  name: string;
  streamPrefix: string;
  collections: RebuildSpec[];
  /**
   * The checkpointed processor that keeps the model live. When it does nothing but write the model
   * (`onlyProjects`), a rebuild sets its checkpoint to where the rebuild read up to; otherwise the
   * checkpoint stays where it is (the processor's other work must still see every event).
   */
  processor: { name: string; onlyProjects: boolean };
  /**
   * Replayed in a thread of its own on the embedded stores, beside the other models (see
   * replayToHead): for a model with a large share of the events and documents.
   */
  replayInThread?: boolean;
  initial(streamId: string): State;
  evolve(state: State, event: ReplayedEvent): State;
  documents(state: State, revision: number): Array<{ collection: string; doc: Doc }>;
}

/** `credits-acct_…-test` → [acct_…, test]. */
function ledgerOf(streamId: string): [string, Mode] {
  const rest = streamId.slice(CREDIT_LEDGER_STREAM_PREFIX.length);
  const cut = rest.lastIndexOf('-');
  return [rest.slice(0, cut), rest.slice(cut + 1) as Mode];
}

const dispatches: ReadModelDefinition<DispatchState> = {
  name: 'dispatches',
  streamPrefix: DISPATCH_STREAM_PREFIX,
  collections: [{ name: 'dispatches', indexes: DISPATCH_VIEW_INDEXES }],
  processor: { name: 'dispatch-views', onlyProjects: true },
  // Most events and documents are dispatches' (a launch is 3 or 4 events, one of them the charge on
  // its ledger, and one dispatch document): on two cores the others replay beside it.
  replayInThread: true,
  initial: () => dispatchDecider.initialState,
  evolve: (state, event) => dispatchDecider.evolve(state, toDomainEvent(event, upcastDispatchEvent)),
  documents: (state) => (state.status === 'none' ? [] : [{ collection: 'dispatches', doc: toDispatchView(state) }]),
};

const creditLedgers: ReadModelDefinition<CreditLedger> = {
  name: 'credit_ledgers',
  streamPrefix: CREDIT_LEDGER_STREAM_PREFIX,
  collections: [{ name: 'credit_ledgers', indexes: ['account_id'] }],
  // The processor also creates the dispatch of a charge that has none: it must see every event.
  processor: { name: 'credit-ledgers', onlyProjects: false },
  initial: (streamId) => creditLedgerDecider(...ledgerOf(streamId)).initialState,
  evolve: (state, event) => creditLedgerDecider(state.accountId, state.mode).evolve(state, toDomainEvent(event, upcastCreditLedgerEvent)),
  documents: (state, revision) => [{ collection: 'credit_ledgers', doc: toLedgerView(state, revision) }],
};

/** An account's state, and its keys' issue events (the api_keys documents are made from them). */
type AccountFold = { state: AccountState; issued: Array<ApiKeyIssued['data']> };

const accounts: ReadModelDefinition<AccountFold> = {
  name: 'accounts',
  streamPrefix: 'account-',
  collections: [{ name: 'accounts' }, { name: 'api_keys', indexes: ['key_hash', 'account_id'] }],
  processor: { name: 'account-views', onlyProjects: true },
  initial: () => ({ state: accountDecider.initialState, issued: [] }),
  evolve: ({ state, issued }, event) => {
    const domain = toDomainEvent(event, upcastAccountEvent);
    return { state: accountDecider.evolve(state, domain), issued: domain.type === 'ApiKeyIssued' ? [...issued, domain.data] : issued };
  },
  documents: ({ state, issued }) => {
    if (state.status === 'none') return [];
    const views = toAccountViews(state as Account, issued);
    return [{ collection: 'accounts', doc: views.account }, ...views.keys.map((doc) => ({ collection: 'api_keys', doc }))];
  },
};

const connections: ReadModelDefinition<ConnectionState> = {
  name: 'connections',
  streamPrefix: CONNECTION_STREAM_PREFIX,
  collections: [{ name: 'connections', indexes: CONNECTION_VIEW_INDEXES }],
  // The processor also destroys a revoked connection's tokens: it must see every event.
  processor: { name: 'connection-views', onlyProjects: false },
  initial: () => connectionDecider.initialState,
  evolve: (state, event) => connectionDecider.evolve(state, toDomainEvent(event, upcastConnectionEvent)),
  documents: (state) => (state.status === 'none' ? [] : [{ collection: 'connections', doc: toConnectionView(state) }]),
};

const webhookEndpoints: ReadModelDefinition<WebhookEndpointState> = {
  name: 'webhook_endpoints',
  streamPrefix: 'webhook-',
  collections: [{ name: 'webhook_endpoints', indexes: ['account_id', 'mode', 'enabled', 'deleted'] }],
  processor: { name: 'webhook-endpoint-views', onlyProjects: true },
  initial: () => webhookEndpointDecider.initialState,
  evolve: (state, event) => webhookEndpointDecider.evolve(state, toDomainEvent(event, upcastWebhookEndpointEvent)),
  documents: (state) => (state.status === 'none' ? [] : [{ collection: 'webhook_endpoints', doc: toEndpointView(state) }]),
};

/** Every read model a rebuild can make from the event store alone. */
export const READ_MODELS: readonly ReadModelDefinition[] = [accounts, dispatches, creditLedgers, connections, webhookEndpoints];

/**
 * What the read store holds that events do not give, so that no rebuild can make it: it is
 * operational state, kept by the services as they work (and `ops rebuild` leaves it alone).
 */
export const OPERATIONAL_COLLECTIONS: ReadonlyArray<{ name: string; what: string }> = [
  { name: 'webhook_deliveries', what: 'deliveries and their attempts: each made when an event was fanned out, then sent and retried' },
  { name: 'partner_events', what: 'the Events API window (30 days), written as partner events pass on the bus' },
  { name: 'webhook_endpoint_health', what: "endpoints' recent failures, which decide when one is disabled" },
  { name: 'idempotency_keys', what: "the gateway's kept answers to Idempotency-Keys (24 h)" },
  { name: 'dispatch_idempotency_keys', what: "dispatch-service's Idempotency-Keys of launches (24 h)" },
  { name: 'connection_tokens', what: 'the token vault: sealed access and refresh tokens, never in an event' },
  { name: 'connection_oauth_states', what: 'OAuth state records, by hash, until their window ends' },
  { name: 'connection_channel_slots', what: 'leases on (account, mode, channel) slots' },
  { name: 'checkpoints', what: "each processor's position in the event store" },
];

export function readModelNamed(name: string): ReadModelDefinition {
  const found = READ_MODELS.find((model) => model.name === name);
  if (!found) throw new Error(`no read model named ${name}; rebuildable: ${READ_MODELS.map((model) => model.name).join(', ')}`);
  return found;
}
