import { createServer, request, type Server } from 'node:http';
import type { LookupAddress, LookupOptions } from 'node:dns';
import type { AddressInfo, LookupFunction } from 'node:net';
import { FORBIDDEN_HOST_ERROR_CODE, guardedLookup } from './guarded-lookup';

const strict = { allowPrivateNetworks: false };
const permissive = { allowPrivateNetworks: true };

/** A callback-style resolver from a fixed table, standing in for DNS whose answers we control. */
function fakeDns(table: Record<string, LookupAddress[]>): LookupFunction {
  return (hostname, options, callback) => {
    const answer = table[hostname];
    setImmediate(() => {
      if (answer === undefined) {
        callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
      } else if (options.all) {
        callback(null, answer);
      } else {
        callback(null, answer[0].address, answer[0].family);
      }
    });
  };
}

const dns = fakeDns({
  'partner.example.com': [
    { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
    { address: '93.184.216.34', family: 4 },
  ],
  // A name that passed registration and now points inside (DNS rebinding).
  'rebound.example.com': [{ address: '127.0.0.1', family: 4 }],
  'mixed.example.com': [
    { address: '93.184.216.34', family: 4 },
    { address: '169.254.169.254', family: 4 },
  ],
});

type LookupOutcome = { err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number };

function lookupWith(fn: LookupFunction, hostname: string, options: LookupOptions): Promise<LookupOutcome> {
  return new Promise((resolve) => fn(hostname, options, (err, address, family) => resolve({ err, address, family })));
}

describe('guardedLookup', () => {
  it('passes public answers through, all of them when asked for all', async () => {
    const outcome = await lookupWith(guardedLookup(strict, dns), 'partner.example.com', { all: true });
    expect(outcome.err).toBeNull();
    expect(outcome.address).toEqual([
      { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
      { address: '93.184.216.34', family: 4 },
    ]);
  });

  it('answers with the first address and its family when one is asked for', async () => {
    const outcome = await lookupWith(guardedLookup(strict, dns), 'partner.example.com', {});
    expect(outcome).toEqual({ err: null, address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 });
  });

  it.each([{ all: true }, {}])('refuses a name that now resolves to loopback (options %j)', async (options) => {
    const outcome = await lookupWith(guardedLookup(strict, dns), 'rebound.example.com', options);
    expect(outcome.err?.code).toBe(FORBIDDEN_HOST_ERROR_CODE);
    expect(outcome.err?.code).toBe('ERR_FORBIDDEN_HOST');
    expect(outcome.err?.message).toContain('rebound.example.com');
  });

  it('refuses a name when any of its addresses is forbidden', async () => {
    const outcome = await lookupWith(guardedLookup(strict, dns), 'mixed.example.com', { all: true });
    expect(outcome.err?.code).toBe(FORBIDDEN_HOST_ERROR_CODE);
  });

  it('lets private answers through when private networks are allowed', async () => {
    const outcome = await lookupWith(guardedLookup(permissive, dns), 'rebound.example.com', {});
    expect(outcome).toEqual({ err: null, address: '127.0.0.1', family: 4 });
  });

  it('answers an error with no address, in the shape that was asked for', async () => {
    expect(await lookupWith(guardedLookup(strict, dns), 'nowhere.example.com', {})).toMatchObject({ address: '' });
    expect(await lookupWith(guardedLookup(strict, dns), 'nowhere.example.com', { all: true })).toMatchObject({ address: [] });
    expect(await lookupWith(guardedLookup(strict, dns), 'rebound.example.com', {})).toMatchObject({ address: '', err: { code: FORBIDDEN_HOST_ERROR_CODE } });
    expect(await lookupWith(guardedLookup(strict, dns), 'rebound.example.com', { all: true })).toMatchObject({
      address: [],
      err: { code: FORBIDDEN_HOST_ERROR_CODE },
    });
  });

  it('judges a resolver that answers one address even when asked for all, with the family asked for', async () => {
    const single =
      (address: string): LookupFunction =>
      (_hostname, _options, callback) =>
        setImmediate(() => callback(null, address, 4));
    expect(await lookupWith(guardedLookup(strict, single('93.184.216.34')), 'partner.example.com', {})).toEqual({
      err: null,
      address: '93.184.216.34',
      family: 4,
    });
    expect(await lookupWith(guardedLookup(strict, single('2606:2800:220:1:248:1893:25c8:1946')), 'partner.example.com', { family: 6 })).toEqual({
      err: null,
      address: '2606:2800:220:1:248:1893:25c8:1946',
      family: 6,
    });
    expect(await lookupWith(guardedLookup(strict, single('93.184.216.34')), 'partner.example.com', { all: true })).toEqual({
      err: null,
      address: [{ address: '93.184.216.34', family: 4 }],
      family: undefined,
    });
    expect((await lookupWith(guardedLookup(strict, single('127.0.0.1')), 'rebound.example.com', {})).err?.code).toBe(FORBIDDEN_HOST_ERROR_CODE);
  });

  it('answers ENOTFOUND when the resolver found no address at all', async () => {
    const empty: LookupFunction = (_hostname, _options, callback) => setImmediate(() => callback(null, [] as unknown as string, 4));
    const outcome = await lookupWith(guardedLookup(strict, empty), 'void.example.com', {});
    expect([outcome.err?.code, outcome.err?.message, outcome.address]).toEqual(['ENOTFOUND', 'getaddrinfo ENOTFOUND void.example.com', '']);
    expect(await lookupWith(guardedLookup(strict, empty), 'void.example.com', { all: true })).toEqual({ err: null, address: [], family: undefined });
  });

  it('passes resolution errors through unchanged', async () => {
    const outcome = await lookupWith(guardedLookup(strict, dns), 'nowhere.example.com', { all: true });
    expect(outcome.err?.code).toBe('ENOTFOUND');
  });

  it('uses the system resolver by default (localhost is loopback via /etc/hosts)', async () => {
    expect((await lookupWith(guardedLookup(strict), 'localhost', { all: true })).err?.code).toBe(FORBIDDEN_HOST_ERROR_CODE);
    expect((await lookupWith(guardedLookup(permissive), 'localhost', {})).err).toBeNull();
  });

  describe('as the lookup of a real HTTP request', () => {
    let server: Server;
    let port: number;
    const hits: string[] = [];

    beforeAll(async () => {
      server = createServer((req, res) => {
        hits.push(req.headers.host ?? '');
        res.end('ok');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });

    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    function get(lookup: LookupFunction): Promise<number | string> {
      return new Promise((resolve) => {
        const req = request({ host: 'rebound.example.com', port, path: '/', agent: false, lookup }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
        req.end();
      });
    }

    it('never connects when the name resolves to a forbidden address', async () => {
      hits.length = 0;
      expect(await get(guardedLookup(strict, dns))).toBe(FORBIDDEN_HOST_ERROR_CODE);
      expect(hits).toEqual([]);
    });

    it('connects to the resolved address when private networks are allowed', async () => {
      hits.length = 0;
      expect(await get(guardedLookup(permissive, dns))).toBe(200);
      expect(hits).toEqual([`rebound.example.com:${port}`]);
    });
  });
});
