import { assertNever, Decider, DomainEvent, DomainRuleViolation, eventVersions } from '@campaign-ops/decider';
import { CampaignSpec, Channel } from '@campaign-ops/channels';
import { CREDITS_PER_DISPATCH } from './dispatch.decider';
import { Mode } from './dispatch.events';

/**
 * One account's credits in one mode. A charge carries the whole dispatch it pays for, so a
 * dispatch can always be completed from its charge: credits are never taken without a dispatch.
 */
export interface DispatchToCreate {
  dispatchId: string;
  channel: Channel;
  campaign: CampaignSpec;
  connectionId: string | null;
  idempotencyKey: string | null;
  requestId: string | null;
}

export type CreditsGranted = DomainEvent<'CreditsGranted', { grantId: string; amount: number; grantedAt: string }>;
export type DispatchCharged = DomainEvent<'DispatchCharged', { amount: number; chargedAt: string; dispatch: DispatchToCreate }>;
export type CreditLedgerEvent = CreditsGranted | DispatchCharged;

/** Each type's upcasters from its older versions, oldest first (docs/architecture.md, "Event versioning"); both are still at version 1. */
export const CREDIT_LEDGER_EVENTS = eventVersions<CreditLedgerEvent>('credit ledger', {
  CreditsGranted: [],
  DispatchCharged: [],
});
const event = CREDIT_LEDGER_EVENTS.event;

export interface CreditLedger {
  accountId: string;
  mode: Mode;
  balance: number;
  /** Grants already applied: a grant delivered twice counts once. */
  grantIds: string[];
}

export type CreditLedgerCommand =
  { type: 'GrantCredits'; grantId: string; amount: number; now: string } | { type: 'ChargeForDispatch'; dispatch: DispatchToCreate; now: string };

export class InsufficientCredits extends DomainRuleViolation {
  readonly rule = 'insufficient_credits';
  constructor(readonly balance: number) {
    super(`A dispatch costs ${CREDITS_PER_DISPATCH} credit; the balance is ${balance}.`);
  }
}

export const creditLedgerStreamId = (accountId: string, mode: Mode) => `credits-${accountId}-${mode}`;
export const CREDIT_LEDGER_STREAM_PREFIX = 'credits-';

/** `credits-acct_…-test` → [acct_…, test]: the ledger a stream is. */
export function ledgerOfStream(streamId: string): [accountId: string, mode: Mode] {
  const rest = streamId.slice(CREDIT_LEDGER_STREAM_PREFIX.length);
  const cut = rest.lastIndexOf('-');
  return [rest.slice(0, cut), rest.slice(cut + 1) as Mode];
}

export const emptyLedger = (accountId: string, mode: Mode): CreditLedger => ({ accountId, mode, balance: 0, grantIds: [] });

function decide(command: CreditLedgerCommand, state: CreditLedger): CreditLedgerEvent[] {
  switch (command.type) {
    case 'GrantCredits':
      if (state.grantIds.includes(command.grantId)) return [];
      return [event('CreditsGranted', { grantId: command.grantId, amount: command.amount, grantedAt: command.now })];
    case 'ChargeForDispatch':
      if (state.balance < CREDITS_PER_DISPATCH) throw new InsufficientCredits(state.balance);
      return [event('DispatchCharged', { amount: CREDITS_PER_DISPATCH, chargedAt: command.now, dispatch: command.dispatch })];
    default:
      return assertNever(command);
  }
}

function evolve(state: CreditLedger, event: CreditLedgerEvent): CreditLedger {
  switch (event.type) {
    case 'CreditsGranted':
      return { ...state, balance: state.balance + event.data.amount, grantIds: [...state.grantIds, event.data.grantId] };
    case 'DispatchCharged':
      return { ...state, balance: state.balance - event.data.amount };
    default:
      return assertNever(event);
  }
}

/** The ledger's decider for one account and mode (its initial state names them). */
export const creditLedgerDecider = (accountId: string, mode: Mode): Decider<CreditLedgerCommand, CreditLedgerEvent, CreditLedger> => ({
  initialState: emptyLedger(accountId, mode),
  decide,
  evolve,
});

export const upcastCreditLedgerEvent = CREDIT_LEDGER_EVENTS.upcast;
