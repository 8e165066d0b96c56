import { decideAll } from '@campaign-ops/decider';
import { creditLedgerDecider, dispatchDecider, DispatchCommand, CreditLedgerCommand } from '@campaign-ops/dispatch-domain';
import { documentsAfter } from '@campaign-ops/event-sourcing';
import { creditLedgersProjection } from './credit-ledgers';
import { dispatchesProjection } from './dispatch-store';

const campaign = {
  name: 'Spring',
  objective: 'traffic',
  budget: { amount_micros: 5_000_000, currency: 'USD', type: 'daily' as const },
  schedule: { start_at: '2026-12-01T09:00:00Z', timezone: 'UTC' },
};

describe('the dispatches projection', () => {
  it('given a launch that succeeded on its second attempt, then one document: the resource at the last revision, with its tenancy', () => {
    const given = decideAll(dispatchDecider, [
      {
        type: 'CreateDispatch',
        dispatchId: 'dsp_1',
        accountId: 'acct_1',
        mode: 'live',
        channel: 'google_ads',
        campaign,
        connectionId: 'con_1',
        idempotencyKey: null,
        now: '2026-12-01T08:00:00.000Z',
      },
      {
        type: 'RecordProviderFailure',
        attempt: 1,
        error: { code: 'provider_unavailable', message: 'timeout', provider_code: null, retryable: true },
        now: '2026-12-01T08:00:01.000Z',
      },
      { type: 'RecordProviderSuccess', attempt: 2, providerResourceId: 'cmp_9', now: '2026-12-01T08:00:02.000Z' },
    ] as DispatchCommand[]);
    const documents = documentsAfter(dispatchesProjection, 'dispatch-dsp_1', given);
    expect(documents).toHaveLength(1);
    expect(documents[0]).toMatchObject({
      collection: 'dispatches',
      doc: { id: 'dsp_1', account_id: 'acct_1', mode: 'live', status: 'completed', channel: 'google_ads', attempts: 2 },
    });
    expect(dispatchesProjection.documentId('dispatch-dsp_1')).toBe('dsp_1');
  });

  it('given no event of a dispatch, then no document', () => {
    expect(documentsAfter(dispatchesProjection, 'dispatch-dsp_1', [])).toEqual([]);
  });
});

describe('the credit_ledgers projection', () => {
  it('given a grant and a charge, then the balance and grants at the last revision, under account:mode', () => {
    const given = decideAll(creditLedgerDecider('acct_1', 'test'), [
      { type: 'GrantCredits', grantId: 'grant_1', amount: 10, now: '2026-12-01T08:00:00.000Z' },
      {
        type: 'ChargeForDispatch',
        dispatch: { dispatchId: 'dsp_1', channel: 'google_ads', campaign, connectionId: null, idempotencyKey: null, requestId: 'req_1' },
        now: '2026-12-01T08:00:01.000Z',
      },
    ] as CreditLedgerCommand[]);
    expect(documentsAfter(creditLedgersProjection, 'credits-acct_1-test', given)).toEqual([
      { collection: 'credit_ledgers', doc: { id: 'acct_1:test', account_id: 'acct_1', mode: 'test', balance: 9, grant_ids: ['grant_1'], revision: 1 } },
    ]);
    expect(creditLedgersProjection.documentId('credits-acct_1-test')).toBe('acct_1:test');
  });

  it('resumes from a document that holds its revision, and not from one written before revisions were kept', () => {
    const doc = { id: 'acct_1:test', account_id: 'acct_1', mode: 'test', balance: 9, grant_ids: ['grant_1'], revision: 1 };
    expect(creditLedgersProjection.resume!(doc)).toEqual({ state: { accountId: 'acct_1', mode: 'test', balance: 9, grantIds: ['grant_1'] }, revision: 1 });
    expect(creditLedgersProjection.resume!({ ...doc, revision: undefined })).toBeNull();
  });
});
