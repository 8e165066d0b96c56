import { accountDecider, accountStreamId, AccountCommand } from '@campaign-ops/account-domain';
import { decideAll } from '@campaign-ops/decider';
import { connectionDecider, ConnectionCommand, connectionStreamId } from '@campaign-ops/connection-domain';
import { creditLedgerDecider, creditLedgerStreamId, dispatchDecider, dispatchStreamId, DispatchCommand } from '@campaign-ops/dispatch-domain';
import { inCanonicalOrder, toStoredEvent } from '@campaign-ops/event-sourcing';
import { EventStore, EventToAppend } from '@campaign-ops/event-store';
import { newId } from '@campaign-ops/ids';
import { WebhookEndpointCommand, webhookEndpointDecider, webhookStreamId } from '@campaign-ops/webhook-domain';

/** Appends made at once: the embedded store writes the appends of one turn in one transaction. */
const BATCH = 2_000;
const DISPATCHES_PER_ACCOUNT = 1_000;

/**
 * Appends a history shaped like production's, decided by the real deciders, straight to the event
 * store (no services, no bus): accounts with a key, a connection imported then refreshed (every
 * other one revoked), and a webhook endpoint updated (every third one deleted); and per launch a charge on the account's test
 * ledger, the dispatch's acceptance and its outcome (one in ten meets a transient failure first,
 * one in twenty fails). For measuring exports and rebuilds, and for their specs. About `events`
 * events are appended (a launch makes 3 or 4); answers how many exactly.
 */
export async function appendSyntheticHistory(store: EventStore, events: number): Promise<number> {
  let appended = 0;
  let pending: Array<Promise<unknown>> = [];
  const append = (streamId: string, stored: EventToAppend[]) => {
    appended += stored.length;
    pending.push(store.append(streamId, stored, { expectedRevision: 'any' }));
  };
  const settle = async () => {
    await Promise.all(pending);
    pending = [];
  };
  const at = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString();

  let launch = 0;
  while (appended < events) {
    const accountId = newId('acct');
    const meta = { accountId, requestId: null };
    const account = decideAll(accountDecider, [
      { type: 'OpenAccount', accountId, name: `Synthetic ${accountId.slice(-6)}`, credits: 1_000_000, now: at(launch) },
      { type: 'IssueApiKey', keyId: newId('key'), mode: 'test', keyHash: 'f'.repeat(64), now: at(launch) },
    ] satisfies AccountCommand[]).map(inCanonicalOrder);
    append(
      accountStreamId(accountId),
      account.map((e) => toStoredEvent(e, meta)),
    );
    const connectionId = newId('con');
    const connection = decideAll(connectionDecider, [
      {
        type: 'ImportToken',
        connectionId,
        accountId,
        mode: 'test',
        channel: 'google_ads',
        providerAccountId: `pa_${accountId.slice(-6)}`,
        sandbox: true,
        scopes: ['ads'],
        account: { currency: 'USD', timezone: 'UTC' },
        expiresAt: null,
        now: at(launch),
      },
      { type: 'RefreshToken', expiresAt: at(launch + 3600), now: at(launch + 1) },
      ...(launch % (2 * DISPATCHES_PER_ACCOUNT) === 0 ? [{ type: 'Revoke', reason: 'deleted', now: at(launch + 2) } as const] : []),
    ] satisfies ConnectionCommand[]).map(inCanonicalOrder);
    append(
      connectionStreamId(connectionId),
      connection.map((e) => toStoredEvent(e, { ...meta, mode: 'test' })),
    );
    const endpointId = newId('whk');
    const endpoint = decideAll(webhookEndpointDecider, [
      {
        type: 'CreateEndpoint',
        endpointId,
        accountId,
        mode: 'test',
        url: 'https://hooks.example.com/campaign-ops',
        events: ['dispatch.completed'],
        sealedSecret: 'sealed',
        now: at(launch),
      },
      { type: 'UpdateEndpoint', events: ['dispatch.completed', 'dispatch.failed'], now: at(launch + 1) },
      ...(launch % (3 * DISPATCHES_PER_ACCOUNT) === 0 ? [{ type: 'DeleteEndpoint', now: at(launch + 2) } as const] : []),
    ] satisfies WebhookEndpointCommand[]).map(inCanonicalOrder);
    append(
      webhookStreamId(endpointId),
      endpoint.map((e) => toStoredEvent(e, { ...meta, mode: 'test' })),
    );
    const ledger = creditLedgerDecider(accountId, 'test');
    let balance = ledger.initialState;
    const grant = ledger.decide({ type: 'GrantCredits', grantId: newId('acct'), amount: 1_000_000, now: at(launch) }, balance).map(inCanonicalOrder);
    balance = grant.reduce(ledger.evolve, balance);
    append(
      creditLedgerStreamId(accountId, 'test'),
      grant.map((e) => toStoredEvent(e, { ...meta, mode: 'test' })),
    );

    for (let i = 0; i < DISPATCHES_PER_ACCOUNT && appended < events; i++, launch++) {
      const dispatchId = newId('dsp');
      const requestMeta = { accountId, mode: 'test', requestId: `req_${dispatchId.slice(4)}` };
      const campaign = {
        name: `Spring sale ${launch}`,
        objective: 'traffic',
        budget: { amount_micros: 5_000_000, currency: 'USD', type: 'daily' as const },
        schedule: { start_at: at(launch), timezone: 'UTC' },
      };
      const charge = ledger
        .decide(
          {
            type: 'ChargeForDispatch',
            dispatch: { dispatchId, channel: 'google_ads', campaign, connectionId: null, idempotencyKey: null, requestId: requestMeta.requestId },
            now: at(launch),
          },
          balance,
        )
        .map(inCanonicalOrder);
      balance = charge.reduce(ledger.evolve, balance);
      append(
        creditLedgerStreamId(accountId, 'test'),
        charge.map((e) => toStoredEvent(e, requestMeta)),
      );
      const outcome: DispatchCommand[] =
        launch % 20 === 7
          ? [
              {
                type: 'RecordProviderFailure',
                attempt: 1,
                error: { code: 'provider_validation_failed', message: 'budget below minimum', provider_code: 'BUDGET_TOO_LOW', retryable: false },
                now: at(launch + 1),
              },
            ]
          : launch % 10 === 3
            ? [
                {
                  type: 'RecordProviderFailure',
                  attempt: 1,
                  error: { code: 'provider_unavailable', message: 'timeout', provider_code: null, retryable: true },
                  now: at(launch + 1),
                },
                { type: 'RecordProviderSuccess', attempt: 2, providerResourceId: `cmp_${launch}`, now: at(launch + 2) },
              ]
            : [{ type: 'RecordProviderSuccess', attempt: 1, providerResourceId: `cmp_${launch}`, now: at(launch + 1) }];
      const dispatch = decideAll(dispatchDecider, [
        {
          type: 'CreateDispatch',
          dispatchId,
          accountId,
          mode: 'test',
          channel: 'google_ads',
          campaign,
          connectionId: null,
          idempotencyKey: null,
          now: at(launch),
        } as DispatchCommand,
        ...outcome,
      ]).map(inCanonicalOrder);
      append(
        dispatchStreamId(dispatchId),
        dispatch.map((e) => toStoredEvent(e, requestMeta)),
      );
      if (pending.length >= BATCH) await settle();
    }
  }
  await settle();
  return appended;
}
