import { ArgumentMetadata } from '@nestjs/common';
import { CreateConnectionDto, ListConnectionsQueryDto, ReauthorizeConnectionDto } from '@campaign-ops/api-contract';
import { ApiError } from '@campaign-ops/api-errors';
import { ApiValidationPipe } from './api-validation.pipe';

const pipe = new ApiValidationPipe();
const body = (metatype: Function): ArgumentMetadata => ({ type: 'body', metatype: metatype as ArgumentMetadata['metatype'] });

async function errorOf(value: unknown, metadata: ArgumentMetadata): Promise<{ code: string; param?: string } | null> {
  try {
    await pipe.transform(value, metadata);
    return null;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { code: error.code, param: error.param };
  }
}

const importBody = () => ({
  channel: 'meta_ads',
  provider_account_id: 'act_42',
  credentials: { access_token: 'EAAB', refresh_token: 'r', expires_at: '2027-01-01T00:00:00Z' },
});

describe('connection requests through the ApiValidationPipe', () => {
  it('accepts a token import, an OAuth start and a bare sandbox connection, and hands them on as they came', async () => {
    expect(await pipe.transform(importBody(), body(CreateConnectionDto))).toEqual(importBody());
    expect(
      await errorOf({ channel: 'google_ads', provider_account_id: '123-456-7890', redirect_uri: 'https://partner.example/back' }, body(CreateConnectionDto)),
    ).toBeNull();
    expect(
      await errorOf(
        { channel: 'tiktok_ads', provider_account_id: 'adv_1', sandbox: { currency: 'EUR', timezone: 'Europe/Berlin' } },
        body(CreateConnectionDto),
      ),
    ).toBeNull();
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    ['no channel', { provider_account_id: 'a' }, 'parameter_missing', 'channel'],
    ['a channel not in the catalog', { channel: 'myspace_ads', provider_account_id: 'a' }, 'parameter_invalid', 'channel'],
    ['no provider account', { channel: 'meta_ads' }, 'parameter_missing', 'provider_account_id'],
    ['a provider account with spaces', { channel: 'meta_ads', provider_account_id: 'act 42' }, 'parameter_invalid', 'provider_account_id'],
    ['an unknown field', { ...importBody(), scope: 'all' }, 'parameter_unknown', 'scope'],
    ['an unknown credentials field', { ...importBody(), credentials: { access_token: 'a', password: 'x' } }, 'parameter_unknown', 'credentials.password'],
    ['credentials without the access token', { ...importBody(), credentials: { refresh_token: 'r' } }, 'parameter_missing', 'credentials.access_token'],
    ['an empty access token', { ...importBody(), credentials: { access_token: '' } }, 'parameter_invalid', 'credentials.access_token'],
    ['an access token that is not a string', { ...importBody(), credentials: { access_token: 42 } }, 'parameter_invalid', 'credentials.access_token'],
    ['credentials that are not an object', { ...importBody(), credentials: 'EAAB' }, 'parameter_invalid', 'credentials'],
    [
      'an expiry that is not UTC',
      { ...importBody(), credentials: { access_token: 'a', expires_at: '2027-01-01T00:00:00+01:00' } },
      'parameter_invalid',
      'credentials.expires_at',
    ],
    ['both credentials and redirect_uri', { ...importBody(), redirect_uri: 'https://partner.example/back' }, 'parameter_invalid', 'redirect_uri'],
    [
      'a sandbox currency that is not ISO 4217',
      { channel: 'meta_ads', provider_account_id: 'a', sandbox: { currency: 'EURO' } },
      'parameter_invalid',
      'sandbox.currency',
    ],
    [
      'a sandbox time zone that does not exist',
      { channel: 'meta_ads', provider_account_id: 'a', sandbox: { timezone: 'Mars/Olympus' } },
      'parameter_invalid',
      'sandbox.timezone',
    ],
  ])('answers %s with %s at %s', async (_, value, code, param) => expect(await errorOf(value, body(CreateConnectionDto))).toEqual({ code, param }));

  it('takes credentials or redirect_uri (or neither) to reauthorize, not both, nor anything else', async () => {
    expect(await errorOf({}, body(ReauthorizeConnectionDto))).toBeNull();
    expect(await errorOf({ credentials: { access_token: 'a' } }, body(ReauthorizeConnectionDto))).toBeNull();
    expect(await errorOf({ credentials: { access_token: 'a' }, redirect_uri: 'https://x.example' }, body(ReauthorizeConnectionDto))).toEqual({
      code: 'parameter_invalid',
      param: 'redirect_uri',
    });
    expect(await errorOf({ channel: 'meta_ads' }, body(ReauthorizeConnectionDto))).toEqual({ code: 'parameter_unknown', param: 'channel' });
  });

  it('filters lists by channel and status from the catalog', async () => {
    const query = { type: 'query', metatype: ListConnectionsQueryDto } as ArgumentMetadata;
    expect(await errorOf({ channel: 'meta_ads', status: 'reauth_required', limit: '100' }, query)).toBeNull();
    expect(await errorOf({ status: 'expired' }, query)).toEqual({ code: 'parameter_invalid', param: 'status' });
    expect(await errorOf({ limit: '101' }, query)).toEqual({ code: 'parameter_invalid', param: 'limit' });
    expect(await errorOf({ provider: 'x' }, query)).toEqual({ code: 'parameter_unknown', param: 'provider' });
  });
});
