import { Body, Controller, Delete, HttpCode, Param, Patch, Post, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiSecurity, ApiTags } from '@nestjs/swagger';
import {
  AdminAccountResponse,
  ApiKeyResponse,
  CreateAccountDto,
  CreateKeyDto,
  GrantCreditsDto,
  NoBody,
  RevokedApiKeyResponse,
  UpdateAccountDto,
} from '@campaign-ops/api-contract';
import { ApiAnswer } from '@campaign-ops/service-runtime';
import { unwrap } from '@campaign-ops/api-errors';
import { AccountDirectory, AccountResource } from '@campaign-ops/accounts';
import { CreditGrant } from '@campaign-ops/account-domain';
import { CreditBalances, SUBJECTS } from '@campaign-ops/service-messages';
import { ServiceClient } from '../http/service-client';
import { AdminTokenGuard } from '../http/auth.guards';

/** The Admin API for operators (docs/api.md#keys-and-modes): accounts, keys, credits. */
const AccountId = () => ApiParam({ name: 'id', description: 'The account id (`acct_…`).' });

@ApiTags('Admin')
@ApiSecurity('adminToken')
@Controller('admin/v1')
@UseGuards(AdminTokenGuard)
export class AdminController {
  constructor(
    private readonly directory: AccountDirectory,
    private readonly services: ServiceClient,
  ) {}

  @Post('accounts')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createAccount',
    summary: 'Open an account',
    description: 'It starts with `credits` (default 1000) in each mode, and the `oauth_redirect_uris` its OAuth rounds may send people back to.',
  })
  @ApiAnswer(AdminAccountResponse)
  async openAccount(@Body() { name, credits, oauth_redirect_uris }: CreateAccountDto) {
    const { account, grants } = await this.directory.openAccount(name, credits, oauth_redirect_uris);
    return this.withBalances(account, grants);
  }

  @Patch('accounts/:id')
  @ApiOperation({
    operationId: 'updateAccount',
    summary: "Change an account's name or OAuth redirect URIs",
    description: 'What is given replaces what the account has; answers the account.',
  })
  @AccountId()
  @ApiAnswer(AdminAccountResponse)
  async updateAccount(@Param('id') accountId: string, @Body() { name, oauth_redirect_uris }: UpdateAccountDto) {
    const account = unwrap(await this.directory.changeSettings(accountId, { name, oauthRedirectUris: oauth_redirect_uris }));
    return this.withBalances(account, []);
  }

  @Post('accounts/:id/keys')
  @HttpCode(200)
  @ApiOperation({ operationId: 'createApiKey', summary: 'Issue an API key', description: 'The key is in this answer only; only its hash is stored.' })
  @AccountId()
  @ApiAnswer(ApiKeyResponse)
  async issueKey(@Param('id') accountId: string, @Body() { mode }: CreateKeyDto) {
    const { account_id: _account, ...key } = unwrap(await this.directory.issueKey(accountId, mode));
    return key;
  }

  @Post('accounts/:id/credits')
  @HttpCode(200)
  @ApiOperation({ operationId: 'grantCredits', summary: 'Grant credits', description: 'Answers the account with its new balances.' })
  @AccountId()
  @ApiAnswer(AdminAccountResponse)
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
    return { id: account.id, name: account.name, credits, oauth_redirect_uris: account.oauth_redirect_uris, created_at: account.created_at };
  }

  @Delete('keys/:id')
  @ApiOperation({ operationId: 'revokeApiKey', summary: 'Revoke an API key' })
  @ApiParam({ name: 'id', description: 'The key id (`key_…`).' })
  @ApiAnswer(RevokedApiKeyResponse)
  async revokeKey(@Param('id') keyId: string, @Body() _body: NoBody) {
    return unwrap(await this.directory.revokeKey(keyId));
  }
}
