import { BlockList, isIP } from 'node:net';

/**
 * Express's `trust proxy` as a function of TRUST_PROXY's CIDRs: a hop is believed (its
 * `X-Forwarded-For` entry taken as the next client address) only when it is one of them. With
 * none, no header is believed and `request.ip` is the socket's peer: a client cannot choose the
 * address it is limited as.
 */
export function trustedProxies(cidrs: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [address, prefix] = cidr.split('/');
    list.addSubnet(address, Number(prefix), isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
  return (address: string) => {
    // A dual-stack socket shows IPv4 peers as ::ffff:a.b.c.d.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    const candidate = mapped ?? address;
    const family = isIP(candidate);
    return family !== 0 && list.check(candidate, family === 6 ? 'ipv6' : 'ipv4');
  };
}
