import { success, Outcome } from '@campaign-ops/api-errors';
import { creditGrantsOf } from '@campaign-ops/account-domain';
import { CREDIT_LEDGER_STREAM_PREFIX, DispatchCharged, Mode } from '@campaign-ops/dispatch-domain';
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
    if (grants.length > 0) await this.grant({ accountId: event.streamId.replace(/^account-/, ''), grants });
  }

  /** Each ledger event: keep the view, and make sure every charge has its dispatch. */
  async onLedgerEvent(event: RecordedEvent): Promise<void> {
    const [accountId, mode] = ledgerOf(event.streamId);
    // The launch that charged made its dispatch, and its view, right after: then there is nothing to do.
    if (event.type === 'DispatchCharged' && !(await this.commands.dispatchExists((event.data as DispatchCharged['data']).dispatch.dispatchId))) {
      await this.commands.createChargedDispatch(event, accountId, mode);
    }
    await this.ledgers.refreshView(accountId, mode, event.revision);
  }
}

/** `credits-acct_…-test` → [acct_…, test]. */
function ledgerOf(streamId: string): [string, Mode] {
  const rest = streamId.slice(CREDIT_LEDGER_STREAM_PREFIX.length);
  const cut = rest.lastIndexOf('-');
  return [rest.slice(0, cut), rest.slice(cut + 1) as Mode];
}
