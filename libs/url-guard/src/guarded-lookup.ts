import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { isForbiddenAddress } from './forbidden-address';
import type { UrlPolicy } from './policy';

export const FORBIDDEN_HOST_ERROR_CODE = 'ERR_FORBIDDEN_HOST';

function forbiddenHostError(hostname: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`host "${hostname}" resolves to a forbidden address`);
  error.code = FORBIDDEN_HOST_ERROR_CODE;
  return error;
}

/**
 * A `lookup` for http(s).request / net.connect that refuses forbidden addresses.
 *
 * A URL checked at registration can later resolve elsewhere (DNS rebinding: a short TTL and a new
 * answer pointing at 127.0.0.1 or 169.254.169.254). Judging the very answer the socket is about to
 * connect to closes that gap: there is no second resolution between the check and the connect.
 * As at registration, one forbidden address among the answers refuses the whole host.
 *
 * Node skips `lookup` for IP-literal hosts, so those must be judged before connecting
 * (precheckWebhookUrl does).
 *
 * `baseLookup` is the resolver underneath, replaceable in tests to simulate a DNS change.
 */
export function guardedLookup(policy: Pick<UrlPolicy, 'allowPrivateNetworks'>, baseLookup: LookupFunction = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    // Ask for every address so the rule does not depend on which one the caller wanted.
    baseLookup(hostname, { ...options, all: true }, (err, result) => {
      const wantsAll = options.all === true;
      if (err) {
        callback(err, wantsAll ? [] : '');
        return;
      }
      const addresses: LookupAddress[] = Array.isArray(result) ? result : [{ address: result, family: options.family === 6 ? 6 : 4 }];
      if (!policy.allowPrivateNetworks && addresses.some((entry) => isForbiddenAddress(entry.address))) {
        callback(forbiddenHostError(hostname), wantsAll ? [] : '');
        return;
      }
      if (wantsAll) {
        callback(null, addresses);
        return;
      }
      const [first] = addresses;
      if (first === undefined) {
        const notFound: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        notFound.code = 'ENOTFOUND';
        callback(notFound, '');
        return;
      }
      callback(null, first.address, first.family);
    });
  };
}
