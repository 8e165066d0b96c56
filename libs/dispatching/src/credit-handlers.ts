import { success, Outcome } from '@campaign-ops/api-errors';
import { ACCOUNT_STREAM_PREFIX, creditGrantsOf } from '@campaign-ops/account-domain';
import { Injectable } from '@nestjs/common';
import { CreditBalances, CreditBalancesRequest, GrantCreditsRequest } from '@campaign-ops/service-messages';
import { CreditLedgers } from './credit-ledgers';
import { RelayedEvent } from './dispatch-relay';

/** Credits as dispatch-service serves them: grants and balances. */
@Injectable()
export class CreditHandlers {
  constructor(private readonly ledgers: CreditLedgers) {}

  async grant({ accountId, grants }: GrantCreditsRequest): Promise<Outcome<CreditBalances>> {
    for (const grant of grants) {
      await this.ledgers.execute(
        accountId,
        grant.mode,
        { type: 'GrantCredits', grantId: grant.grantId, amount: grant.amount, now: new Date().toISOString() },
        {},
      );
    }
    return this.balances({ accountId });
  }

  async balances({ accountId }: CreditBalancesRequest): Promise<Outcome<CreditBalances>> {
    const [live, test] = await Promise.all((['live', 'test'] as const).map(async (mode) => (await this.ledgers.load(accountId, mode)).state.balance));
    return success({ live, test });
  }

  /** Account events from the gateway (relayed over the bus): their grants, applied once. */
  async onAccountEvent(event: RelayedEvent): Promise<void> {
    const grants = creditGrantsOf(event);
    if (grants.length > 0) await this.grant({ accountId: event.streamId.slice(ACCOUNT_STREAM_PREFIX.length), grants });
  }
}
