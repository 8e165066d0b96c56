import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestCertificates, type TestCertificates } from './test-ca';

/** Status code, or the TLS error code when the handshake is refused. */
function get(host: string, port: number, tls: { ca?: string; servername?: string } = {}): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request({ host, port, path: '/', agent: false, ...tls }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}

/** The same request from a fresh Node process, whose trust comes only from its environment. */
function getFromChildProcess(port: number, env: NodeJS.ProcessEnv): Promise<string> {
  const script = `require('node:https').get({ host: 'localhost', port: ${port}, agent: false }, (res) => {
      res.resume(); console.log(res.statusCode);
    }).on('error', (err) => console.log(err.code));`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script], { env, timeout: 10_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout.trim())));
  });
}

describe('createTestCertificates', () => {
  let dir: string;
  let certs: TestCertificates;
  let server: Server;
  let port: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'test-ca-'));
    certs = await createTestCertificates(join(dir, 'nested'));
    server = createServer({ key: certs.key, cert: certs.cert }, (_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes the CA certificate where it says, creating the directory', () => {
    expect(readFileSync(certs.caCertPath, 'utf8')).toBe(certs.caCert);
    expect(certs.caCert).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(certs.cert).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(certs.key).toMatch(/-----BEGIN (EC )?PRIVATE KEY-----/);
  });

  it('is trusted by a client given the CA, for localhost and for 127.0.0.1', async () => {
    expect(await get('localhost', port, { ca: certs.caCert })).toBe(200);
    expect(await get('127.0.0.1', port, { ca: certs.caCert })).toBe(200);
  });

  it('is refused by a client that does not know the CA', async () => {
    expect(await get('localhost', port)).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
  });

  it('is refused for a host name the certificate does not cover', async () => {
    // Same server, but the client checks the certificate against another name.
    expect(await get('127.0.0.1', port, { ca: certs.caCert, servername: 'partner.example.com' })).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
  });

  it('is trusted by a child process through NODE_EXTRA_CA_CERTS, and only then', async () => {
    const { NODE_EXTRA_CA_CERTS: _ignored, ...env } = process.env;
    expect(await getFromChildProcess(port, { ...env, NODE_EXTRA_CA_CERTS: certs.caCertPath })).toBe('200');
    expect(await getFromChildProcess(port, env)).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
  });
});
