import { isIP } from 'node:net';

/*
 * Which addresses a webhook may never be sent to: anything that reaches this host, the network
 * it sits in, or a cloud metadata service. A webhook URL is chosen by a customer, so without this
 * check it is a way to make our servers issue requests inside our own network (SSRF).
 */

type Ipv4Range = readonly [base: string, prefixLength: number];

const FORBIDDEN_IPV4: readonly Ipv4Range[] = [
  ['0.0.0.0', 8], // "this network"; connecting to 0.0.0.0 reaches this host
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT, shared address space
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, including the metadata service at 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (some clouds put services here, e.g. 192.0.0.192 on OCI)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, including the limited broadcast 255.255.255.255
];

/** Dotted quad to an unsigned 32-bit number; the input has already passed net.isIP. */
function ipv4ToNumber(ip: string): number {
  return ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function inIpv4Range(address: number, [base, prefixLength]: Ipv4Range): boolean {
  // Compare the top `prefixLength` bits; division avoids JavaScript's signed 32-bit shifts.
  const size = 2 ** (32 - prefixLength);
  return Math.floor(address / size) === Math.floor(ipv4ToNumber(base) / size);
}

function isForbiddenIpv4Number(address: number): boolean {
  return FORBIDDEN_IPV4.some((range) => inIpv4Range(address, range));
}

/**
 * An IPv6 address as its eight 16-bit groups. Accepts everything net.isIP accepts: "::"
 * compression, a dotted IPv4 tail (::ffff:1.2.3.4) and a zone id (fe80::1%eth0), which is dropped.
 */
function ipv6Groups(ip: string): number[] {
  const withoutZone = ip.split('%')[0];
  const toGroups = (part: string): number[] => {
    if (part === '') return [];
    return part.split(':').flatMap((piece) => {
      if (!piece.includes('.')) return [parseInt(piece, 16)];
      const v4 = ipv4ToNumber(piece);
      return [Math.floor(v4 / 0x10000), v4 % 0x10000];
    });
  };
  const [head, tail] = withoutZone.split('::');
  if (tail === undefined) return toGroups(head);
  const headGroups = toGroups(head);
  const tailGroups = toGroups(tail);
  const zeros = new Array<number>(8 - headGroups.length - tailGroups.length).fill(0);
  return [...headGroups, ...zeros, ...tailGroups];
}

/** The IPv4 address carried in two 16-bit groups. */
function embeddedIpv4(high: number, low: number): number {
  return high * 0x10000 + low;
}

function isForbiddenIpv6(ip: string): boolean {
  const g = ipv6Groups(ip);
  const startsWith = (...prefix: number[]) => prefix.every((value, i) => g[i] === value);

  // ::/96 holds the unspecified address ::, loopback ::1 and the deprecated IPv4-compatible
  // form ::a.b.c.d; none is a legitimate destination for a webhook.
  if (startsWith(0, 0, 0, 0, 0, 0)) return true;

  // Forms that carry an IPv4 address are as dangerous as that address: the kernel (mapped)
  // or a translator (NAT64, 6to4) ends up talking to it.
  if (startsWith(0, 0, 0, 0, 0, 0xffff)) return isForbiddenIpv4Number(embeddedIpv4(g[6], g[7])); // ::ffff:0:0/96
  if (startsWith(0x64, 0xff9b, 0, 0, 0, 0)) return isForbiddenIpv4Number(embeddedIpv4(g[6], g[7])); // 64:ff9b::/96
  if (startsWith(0x2002)) return isForbiddenIpv4Number(embeddedIpv4(g[1], g[2])); // 2002::/16 (6to4)
  // 64:ff9b:1::/48 is NAT64 for an operator's own, local use: it only leads inside a network.
  if (startsWith(0x64, 0xff9b, 1)) return true;

  const first = g[0];
  if ((first & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local, including metadata fd00:ec2::254
  if ((first & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((first & 0xffc0) === 0xfec0) return true; // fec0::/10 deprecated site-local, still private in effect
  if ((first & 0xff00) === 0xff00) return true; // ff00::/8 multicast
  return false;
}

/**
 * Whether an IP address is loopback, private, link-local, metadata, multicast or otherwise
 * reserved, i.e. somewhere a webhook must not be delivered.
 * Anything that is not an IP address is reported as forbidden, so a caller that passes a host
 * name by mistake fails closed rather than open.
 */
export function isForbiddenAddress(ip: string): boolean {
  switch (isIP(ip)) {
    case 4:
      return isForbiddenIpv4Number(ipv4ToNumber(ip));
    case 6:
      return isForbiddenIpv6(ip);
    default:
      return true;
  }
}
