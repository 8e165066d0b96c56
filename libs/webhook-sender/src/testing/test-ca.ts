import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate } from 'selfsigned';

export type TestCertificates = {
  /** PEM file of the CA: give it to a child process as NODE_EXTRA_CA_CERTS. */
  caCertPath: string;
  /** The CA certificate as PEM, for a client's `ca` option. */
  caCert: string;
  /** Private key (PEM) of the server certificate. */
  key: string;
  /** Server certificate (PEM) for `localhost` and 127.0.0.1, signed by the CA. */
  cert: string;
};

const HOUR_MS = 60 * 60 * 1000;

/**
 * A throwaway CA and a server certificate it signed, so tests exercise real TLS verification
 * (a self-signed server certificate would need verification turned off, which hides bugs).
 *
 * Async because selfsigned 5 only generates asynchronously (it uses WebCrypto).
 * EC P-256 keys: generation takes milliseconds where RSA takes up to seconds.
 */
export async function createTestCertificates(dir: string): Promise<TestCertificates> {
  // Back-dated so a clock slightly behind in a container or VM does not see "not yet valid".
  const notBeforeDate = new Date(Date.now() - HOUR_MS);
  const notAfterDate = new Date(Date.now() + 30 * 24 * HOUR_MS);
  const common = { keyType: 'ec', algorithm: 'sha256', notBeforeDate, notAfterDate } as const;

  const ca = await generate([{ name: 'commonName', value: 'campaign-ops test CA' }], {
    ...common,
    extensions: [
      { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });

  const server = await generate([{ name: 'commonName', value: 'localhost' }], {
    ...common,
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      // Clients match the host against the SAN, not the common name.
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });

  mkdirSync(dir, { recursive: true });
  const caCertPath = join(dir, 'test-ca.pem');
  writeFileSync(caCertPath, ca.cert);
  return { caCertPath, caCert: ca.cert, key: server.private, cert: server.cert };
}
