import { NetworkAnswer } from './network-http';
import { tokenRefusal } from './oauth2';

const answer = (status: number, json: unknown): NetworkAnswer => ({ status, headers: {}, text: JSON.stringify(json), json, retryAfterMs: null });

describe('tokenRefusal: a token endpoint that refuses, as RFC 6749 §5.2 says it does', () => {
  it.each([
    ['invalid_client with 401', answer(401, { error: 'invalid_client', error_description: 'client authentication failed' })],
    ['invalid_client with 400', answer(400, { error: 'invalid_client' })],
    ['unauthorized_client', answer(400, { error: 'unauthorized_client', error_description: 'the client may not use this grant' })],
    ['a bare 401 (HTTP Basic refused)', answer(401, { message: 'Unauthorized' })],
  ])("makes %s validation invalid_client: this service's OAuth client is the operator's, no consent fixes it", (_, refused) => {
    const error = tokenRefusal('snapchat_ads', refused);
    expect(error).toMatchObject({ kind: 'validation', providerCode: 'invalid_client', httpStatus: refused.status });
    expect(error.message).toContain('CHANNEL_SNAPCHAT_ADS_CLIENT_ID');
  });

  it.each([
    ['invalid_grant', answer(400, { error: 'invalid_grant', error_description: 'Bad Request' }), 'invalid_grant'],
    ['invalid_grant even with 401', answer(401, { error: 'invalid_grant' }), 'invalid_grant'],
    ['invalid_scope', answer(400, { error: 'invalid_scope' }), 'invalid_scope'],
    ['a 400 without a code', answer(400, {}), 'token_refused'],
  ])('keeps %s auth: the grant cannot be used, the person must consent again', (_, refused, providerCode) =>
    expect(tokenRefusal('snapchat_ads', refused)).toMatchObject({ kind: 'auth', providerCode }),
  );

  it('keeps 429 rate_limited and 5xx transient', () => {
    expect(tokenRefusal('snapchat_ads', answer(429, { error: 'invalid_client' })).kind).toBe('rate_limited');
    expect(tokenRefusal('snapchat_ads', answer(503, { error: 'invalid_client' })).kind).toBe('transient');
  });
});
