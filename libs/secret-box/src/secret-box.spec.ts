import { SecretBox } from './secret-box';

describe('secret box', () => {
  const box = SecretBox.fromHexKey(SecretBox.generateHexKey());

  it('opens what it sealed, and never shows the plaintext sealed', () => {
    const sealed = box.seal('whsec_abc');
    expect(sealed).not.toContain('whsec_abc');
    expect(box.open(sealed)).toBe('whsec_abc');
    expect(box.seal('whsec_abc')).not.toBe(sealed);
  });

  it('refuses a tampered or foreign secret', () => {
    const sealed = box.seal('whsec_abc');
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    expect(() => box.open(tampered)).toThrow();
    expect(() => SecretBox.fromHexKey(SecretBox.generateHexKey()).open(sealed)).toThrow();
  });

  it('refuses a shortened tag (GCM would check its first bytes only) and a nonce of another length', () => {
    const box = SecretBox.fromHexKey(SecretBox.generateHexKey());
    const [version, iv, tag, body] = box.seal('a provider token').split('.');
    const shortTag = Buffer.from(tag, 'base64url').subarray(0, 4).toString('base64url');
    expect(() => box.open([version, iv, shortTag, body].join('.'))).toThrow();
    const longIv = Buffer.concat([Buffer.from(iv, 'base64url'), Buffer.alloc(4)]).toString('base64url');
    expect(() => box.open([version, longIv, tag, body].join('.'))).toThrow('not a sealed secret');
    expect(box.open([version, iv, tag, body].join('.'))).toBe('a provider token');
  });

  it('wants a 32-byte hex key, and nothing around it', () => {
    expect(() => SecretBox.fromHexKey('abc')).toThrow(/64 hexadecimal/);
    expect(() => SecretBox.fromHexKey('x' + 'a'.repeat(64))).toThrow(/64 hexadecimal/);
    expect(() => SecretBox.fromHexKey('a'.repeat(64) + 'x')).toThrow(/64 hexadecimal/);
    expect(() => SecretBox.fromHexKey('A'.repeat(64))).not.toThrow();
  });

  it('writes a versioned value and opens an empty secret too', () => {
    expect(box.seal('s')).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    expect(box.open(box.seal(''))).toBe('');
  });

  it.each([
    ['another version', (sealed: string) => sealed.replace(/^v1/, 'v2')],
    ['no version', (sealed: string) => sealed.replace(/^v1/, '')],
    [
      'no iv',
      (sealed: string) =>
        sealed
          .split('.')
          .map((part, i) => (i === 1 ? '' : part))
          .join('.'),
    ],
    [
      'no tag',
      (sealed: string) =>
        sealed
          .split('.')
          .map((part, i) => (i === 2 ? '' : part))
          .join('.'),
    ],
    ['no body part', (sealed: string) => sealed.split('.').slice(0, 3).join('.')],
    ['nothing', () => ''],
  ])('says plainly that %s is not a sealed secret', (_, corrupt) =>
    expect(() => box.open(corrupt(box.seal('whsec_abc')))).toThrow(new Error('not a sealed secret')),
  );
});
