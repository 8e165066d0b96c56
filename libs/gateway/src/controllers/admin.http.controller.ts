import { Body, Controller, Delete, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { createAccountSchema, createKeySchema, grantCreditsSchema } from '@campaign-ops/api-contract';
import { unwrap } from '@campaign-ops/api-errors';
import { AccountDirectory } from '@campaign-ops/accounts';
import { KeyMode } from '@campaign-ops/account-domain';
import { AdminTokenGuard } from '../http/auth.guards';
import { parseBody } from '../http/validation';

/** The Admin API for operators (API.md §2): accounts, keys, credits. */
@Controller('admin/v1')
@UseGuards(AdminTokenGuard)
export class AdminController {
  constructor(private readonly directory: AccountDirectory) {}

  @Post('accounts')
  @HttpCode(200)
  openAccount(@Body() body: unknown) {
    const { name, credits } = parseBody<{ name: string; credits?: number }>(createAccountSchema, body);
    return this.directory.openAccount(name, credits);
  }

  @Post('accounts/:id/keys')
  @HttpCode(200)
  async issueKey(@Param('id') accountId: string, @Body() body: unknown) {
    const { mode } = parseBody<{ mode: KeyMode }>(createKeySchema, body);
    const { account_id: _account, ...key } = unwrap(await this.directory.issueKey(accountId, mode));
    return key;
  }

  @Post('accounts/:id/credits')
  @HttpCode(200)
  async grantCredits(@Param('id') accountId: string, @Body() body: unknown) {
    const { mode, amount } = parseBody<{ mode: KeyMode; amount: number }>(grantCreditsSchema, body);
    return unwrap(await this.directory.grantCredits(accountId, mode, amount));
  }

  @Delete('keys/:id')
  async revokeKey(@Param('id') keyId: string) {
    return unwrap(await this.directory.revokeKey(keyId));
  }
}
