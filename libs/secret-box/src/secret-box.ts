import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM for secrets we must be able to read back (webhook signing secrets, provider
 * tokens): stored sealed, opened only at the moment of use. The key never leaves config.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /** `hexKey`: 32 bytes as 64 hexadecimal characters. */
  static fromHexKey(hexKey: string): SecretBox {
    if (!/^[0-9a-fA-F]{64}$/.test(hexKey)) throw new Error('an encryption key must be 32 bytes written as 64 hexadecimal characters');
    return new SecretBox(Buffer.from(hexKey, 'hex'));
  }

  static generateHexKey(): string {
    return randomBytes(32).toString('hex');
  }

  seal(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  open(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('not a sealed secret');
    const nonce = Buffer.from(iv, 'base64url');
    const authTag = Buffer.from(tag, 'base64url');
    // Exactly what seal writes: GCM takes shorter tags (down to 4 bytes), and a 4-byte tag is forged in about 2^32 tries.
    if (nonce.length !== IV_BYTES || authTag.length !== TAG_BYTES) throw new Error('not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, nonce, { authTagLength: TAG_BYTES });
    decipher.setAuthTag(authTag);
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}
