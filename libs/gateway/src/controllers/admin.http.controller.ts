import { Body, Controller, Delete, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { CreateAccountDto, CreateKeyDto, GrantCreditsDto, NoBody } from '@campaign-ops/api-contract';
import { unwrap } from '@campaign-ops/api-errors';
import { AccountDirectory, AccountResource } from '@campaign-ops/accounts';
import { CreditGrant } from '@campaign-ops/account-domain';
import { CreditBalances, SUBJECTS } from '@campaign-ops/service-messages';
import { ServiceClient } from '../http/service-client';
import { AdminTokenGuard } from '../http/auth.guards';

/** The Admin API for operators (API.md §2): accounts, keys, credits. */
@Controller('admin/v1')
@UseGuards(AdminTokenGuard)
export class AdminController {
  constructor(
    private readonly directory: AccountDirectory,
    private readonly services: ServiceClient,
  ) {}

  @Post('accounts')
  @HttpCode(200)
  async openAccount(@Body() { name, credits }: CreateAccountDto) {
    const { account, grants } = await this.directory.openAccount(name, credits);
    return this.withBalances(account, grants);
  }

  @Post('accounts/:id/keys')
  @HttpCode(200)
  async issueKey(@Param('id') accountId: string, @Body() { mode }: CreateKeyDto) {
    const { account_id: _account, ...key } = unwrap(await this.directory.issueKey(accountId, mode));
    return key;
  }

  @Post('accounts/:id/credits')
  @HttpCode(200)
  async grantCredits(@Param('id') accountId: string, @Body() { mode, amount }: GrantCreditsDto) {
    const { account, grants } = unwrap(await this.directory.grantCredits(accountId, mode, amount));
    return this.withBalances(account, grants);
  }

  /**
   * Applies the grants at once (dispatch-service keeps the ledgers) and answers the balances. The
   * account events reach the ledgers over the bus as well, so a grant is never lost; it counts once.
   */
  private async withBalances(account: AccountResource, grants: CreditGrant[]) {
    const credits = await this.services.call<CreditBalances>(SUBJECTS.creditsGrant, { accountId: account.id, grants });
    return { id: account.id, name: account.name, credits, created_at: account.created_at };
  }

  @Delete('keys/:id')
  async revokeKey(@Param('id') keyId: string, @Body() _body: NoBody) {
    return unwrap(await this.directory.revokeKey(keyId));
  }
}
