import { specFor } from '@campaign-ops/testing/decider';
import {
  CREDIT_LEDGER_STREAM_PREFIX,
  CreditLedgerEvent,
  creditLedgerDecider,
  creditLedgerStreamId,
  DispatchToCreate,
  InsufficientCredits,
  upcastCreditLedgerEvent,
} from './credit-ledger.decider';

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
  it('grants credits', () =>
    given()
      .when({ type: 'GrantCredits', grantId: 'g1', amount: 5, now: T })
      .then([granted('g1', 5)]));
  it('applies a grant once, however often it is delivered', () =>
    given(granted('g1', 5)).when({ type: 'GrantCredits', grantId: 'g1', amount: 5, now: T }).then([]));
  it('charges one credit for a dispatch, carrying the dispatch', () =>
    given(granted('g1', 1)).when({ type: 'ChargeForDispatch', dispatch, now: T }).then([charged]));
  it('refuses to charge below one credit', () =>
    given(granted('g1', 1), charged).when({ type: 'ChargeForDispatch', dispatch, now: T }).thenThrows(InsufficientCredits));
  it('refuses to charge an empty ledger', () => given().when({ type: 'ChargeForDispatch', dispatch, now: T }).thenThrows(InsufficientCredits));
  it('keeps the balance', () =>
    expect(given(granted('g1', 3), charged, granted('g2', 2), charged).state()).toMatchObject({ balance: 3, grantIds: ['g1', 'g2'] }));
  it('refuses with insufficient_credits, saying the price and the balance', () => {
    const refusal = (() => {
      try {
        given().when({ type: 'ChargeForDispatch', dispatch, now: T }).events();
      } catch (error) {
        return error as InsufficientCredits;
      }
    })();
    expect([refusal?.rule, refusal?.message]).toEqual(['insufficient_credits', 'A dispatch costs 1 credit; the balance is 0.']);
  });
  it('lives in the stream credits-<account>-<mode>', () => {
    expect(creditLedgerStreamId('acct_1', 'live')).toBe('credits-acct_1-live');
    expect(creditLedgerStreamId('acct_1', 'live').startsWith(CREDIT_LEDGER_STREAM_PREFIX)).toBe(true);
    expect(CREDIT_LEDGER_STREAM_PREFIX).toBe('credits-');
  });
  it.each(['CreditsGranted', 'DispatchCharged'])('reads a stored %s v1 as it was written', (type) =>
    expect(upcastCreditLedgerEvent(type, { a: 1 }, 1)).toEqual({ type, version: 1, data: { a: 1 } }),
  );
  it('refuses a stored event it does not know, or a version it cannot read', () => {
    expect(() => upcastCreditLedgerEvent('CreditsExpired', {}, 1)).toThrow('cannot read credit ledger event CreditsExpired v1');
    expect(() => upcastCreditLedgerEvent('CreditsGranted', {}, 2)).toThrow('cannot read credit ledger event CreditsGranted v2');
  });
});
