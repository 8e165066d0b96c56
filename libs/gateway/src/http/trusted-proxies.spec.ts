import { trustedProxies } from './trusted-proxies';

describe('the proxies whose X-Forwarded-For is believed (TRUST_PROXY)', () => {
  it('believes none without TRUST_PROXY', () => {
    const trust = trustedProxies([]);
    expect(['127.0.0.1', '10.0.0.1', '::1'].map(trust)).toEqual([false, false, false]);
  });

  it('believes the addresses of its CIDRs only, IPv4 (also as a dual-stack socket shows it) and IPv6', () => {
    const trust = trustedProxies(['10.0.0.0/8', '192.168.1.7/32', 'fd00::/8']);
    expect(['10.1.2.3', '::ffff:10.1.2.3', '192.168.1.7', 'fd12::1'].map(trust)).toEqual([true, true, true, true]);
    expect(['11.0.0.1', '192.168.1.8', '::ffff:192.168.1.8', 'fe80::1', 'not an address', ''].map(trust)).toEqual([false, false, false, false, false, false]);
  });
});
