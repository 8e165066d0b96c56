import { specFor } from '@campaign-ops/testing/decider';
import { CreditLedgerEvent, creditLedgerDecider, DispatchToCreate, InsufficientCredits } from './credit-ledger.decider';

const given = specFor(creditLedgerDecider('acct_1', 'test'));
const T = '2026-11-22T10:00:00.000Z';
const granted = (grantId: string, amount: number): CreditLedgerEvent => ({ type: 'CreditsGranted', version: 1, data: { grantId, amount, grantedAt: T } });
const dispatch: DispatchToCreate = {
  dispatchId: 'dsp_1',
  channel: 'meta_ads',
  campaign: { name: 'n', objective: 'conversion', budget: { amount_micros: 1, currency: 'USD', type: 'daily' }, schedule: { start_at: T, timezone: 'UTC' } },
  connectionId: null,
  idempotencyKey: null,
  requestId: 'req_1',
};
const charged: CreditLedgerEvent = { type: 'DispatchCharged', version: 1, data: { amount: 1, chargedAt: T, dispatch } };

describe('credit ledger', () => {
  it('grants credits', () => given().when({ type: 'GrantCredits', grantId: 'g1', amount: 5, now: T }).then([granted('g1', 5)]));
  it('applies a grant once, however often it is delivered', () =>
    given(granted('g1', 5)).when({ type: 'GrantCredits', grantId: 'g1', amount: 5, now: T }).then([]));
  it('charges one credit for a dispatch, carrying the dispatch', () =>
    given(granted('g1', 1)).when({ type: 'ChargeForDispatch', dispatch, now: T }).then([charged]));
  it('refuses to charge below one credit', () =>
    given(granted('g1', 1), charged).when({ type: 'ChargeForDispatch', dispatch, now: T }).thenThrows(InsufficientCredits));
  it('refuses to charge an empty ledger', () => given().when({ type: 'ChargeForDispatch', dispatch, now: T }).thenThrows(InsufficientCredits));
  it('keeps the balance', () => expect(given(granted('g1', 3), charged, granted('g2', 2), charged).state()).toMatchObject({ balance: 3, grantIds: ['g1', 'g2'] }));
});
