import { createHmac } from 'node:crypto';
import { signBody, verifySignature } from './signing';

describe('webhook signing', () => {
  const secret = 'whsec_3hW9kQ2mZx7TbLr5yVn8pC4dF6gJ1aSe';
  const body = JSON.stringify({
    id: 'evt_01HZX3K9Q7V8M2N4P6R8T0W2Y4',
    event: 'dispatch.succeeded',
    timestamp: '2024-05-01T12:00:00.000Z',
    data: { dispatchId: 'dsp_01HZX3K9Q7V8M2N4P6R8T0W2Y5', note: 'café ✓' },
  });

  it('signs with HMAC-SHA256 of the raw body keyed with the whole secret string, as lowercase hex', () => {
    // Computed independently of the implementation, the way a partner would.
    const expected = 'sha256=' + createHmac('sha256', Buffer.from(secret, 'utf8')).update(Buffer.from(body, 'utf8')).digest('hex');
    expect(signBody(secret, body)).toBe(expected);
    expect(signBody(secret, Buffer.from(body, 'utf8'))).toBe(expected);
    expect(signBody(secret, body)).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it('matches a fixed known vector (RFC 4231 test case 2)', () => {
    expect(signBody('Jefe', 'what do ya want for nothing?')).toBe('sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });

  it('verifies its own signature over the same bytes', () => {
    expect(verifySignature(secret, body, signBody(secret, body))).toBe(true);
    expect(verifySignature(secret, Buffer.from(body), signBody(secret, body))).toBe(true);
  });

  it('rejects a signature made with another secret or over other bytes', () => {
    const header = signBody(secret, body);
    expect(verifySignature('whsec_other', body, header)).toBe(false);
    expect(verifySignature(secret, body + ' ', header)).toBe(false);
    // A re-serialised body is different bytes, so it must not verify.
    expect(verifySignature(secret, JSON.stringify(JSON.parse(body), null, 2), header)).toBe(false);
  });

  // Each case derives a bad header from the valid one, so only the named defect differs.
  it.each<[string, (valid: string) => string | undefined]>([
    ['missing', () => undefined],
    ['empty', () => ''],
    ['prefix-less', (valid) => valid.slice('sha256='.length)],
    ['other-algorithm', (valid) => valid.replace('sha256=', 'sha1=')],
    ['truncated', (valid) => valid.slice(0, -2)],
    ['too long', (valid) => valid + '00'],
    ['non-hex', () => 'sha256=' + 'z'.repeat(64)],
    ['uppercase-hex', (valid) => 'sha256=' + valid.slice('sha256='.length).toUpperCase()],
    ['space-padded', (valid) => ` ${valid}`],
  ])('returns false, without throwing, for a %s header', (_label, corrupt) => {
    expect(verifySignature(secret, body, corrupt(signBody(secret, body)))).toBe(false);
  });

  it('treats an empty secret as a programming error when signing and as invalid when verifying', () => {
    expect(() => signBody('', body)).toThrow(new TypeError('signBody: the signing secret must be a non-empty string'));
    expect(() => signBody(undefined as unknown as string, body)).toThrow(new TypeError('signBody: the signing secret must be a non-empty string'));
    expect(verifySignature('', body, signBody(secret, body))).toBe(false);
    // What anyone can compute with an empty key is never valid, nor is a secret that is not a string.
    const forged = `sha256=${createHmac('sha256', '').update(body).digest('hex')}`;
    expect(verifySignature('', body, forged)).toBe(false);
    expect(verifySignature(undefined as unknown as string, body, forged)).toBe(false);
  });
});
