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

  it('wants a 32-byte hex key', () => {
    expect(() => SecretBox.fromHexKey('abc')).toThrow(/64 hexadecimal/);
  });
});
