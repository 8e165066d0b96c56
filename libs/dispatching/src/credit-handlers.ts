import { success, Outcome } from '@campaign-ops/api-errors';
import { ACCOUNT_STREAM_PREFIX, creditGrantsOf } from '@campaign-ops/account-domain';
import { DispatchCharged, ledgerOfStream } from '@campaign-ops/dispatch-domain';
import { Injectable } from '@nestjs/common';
import { RecordedEvent } from '@campaign-ops/event-store';
import { CreditBalances, CreditBalancesRequest, GrantCreditsRequest } from '@campaign-ops/service-messages';
import { CreditLedgers } from './credit-ledgers';
import { DispatchCommands } from './dispatch-commands';
import { RelayedEvent } from './dispatch-relay';

/** Credits as dispatch-service serves them: grants, balances, and the ledger's own follow-up. */
@Injectable()
export class CreditHandlers {
  constructor(
    private readonly ledgers: CreditLedgers,
    private readonly commands: DispatchCommands,
  ) {}

  async grant({ accountId, grants }: GrantCreditsRequest): Promise<Outcome<CreditBalances>> {
    for (const grant of grants) {
      await this.ledgers.execute(accountId, grant.mode, { type: 'GrantCredits', grantId: grant.grantId, amount: grant.amount, now: new Date().toISOString() }, {});
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

  /** Each ledger event, once the ledger's view has it: make sure every charge has its dispatch. */
  async onLedgerEvent(event: RecordedEvent): Promise<void> {
    // The launch that charged made its dispatch, and its view, right after: then there is nothing to do.
    if (event.type === 'DispatchCharged' && !(await this.commands.dispatchExists((event.data as DispatchCharged['data']).dispatch.dispatchId))) {
      await this.commands.createChargedDispatch(event, ...ledgerOfStream(event.streamId));
    }
  }
}
