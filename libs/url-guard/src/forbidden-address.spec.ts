import { isForbiddenAddress } from './forbidden-address';

describe('isForbiddenAddress', () => {
  describe('IPv4', () => {
    it.each([
      ['0.0.0.0', '"this host"'],
      ['0.255.255.255', 'top of 0.0.0.0/8'],
      ['10.0.0.0', 'bottom of 10/8'],
      ['10.255.255.255', 'top of 10/8'],
      ['100.64.0.0', 'bottom of 100.64/10 (CGNAT)'],
      ['100.127.255.255', 'top of 100.64/10'],
      ['127.0.0.1', 'loopback'],
      ['127.255.255.254', 'loopback, elsewhere in 127/8'],
      ['169.254.0.1', 'link-local'],
      ['169.254.169.254', 'cloud metadata'],
      ['172.16.0.0', 'bottom of 172.16/12'],
      ['172.31.255.255', 'top of 172.16/12'],
      ['192.0.0.1', 'IETF protocol assignments'],
      ['192.0.0.255', 'top of 192.0.0/24'],
      ['192.168.0.1', 'home router'],
      ['192.168.255.255', 'top of 192.168/16'],
      ['198.18.0.0', 'bottom of 198.18/15'],
      ['198.19.255.255', 'top of 198.18/15'],
      ['224.0.0.1', 'multicast'],
      ['239.255.255.250', 'SSDP multicast'],
      ['240.0.0.1', 'reserved'],
      ['255.255.255.255', 'broadcast'],
    ])('refuses %s (%s)', (ip) => {
      expect(isForbiddenAddress(ip)).toBe(true);
    });

    it.each([
      ['1.1.1.1', 'public resolver'],
      ['8.8.8.8', 'public resolver'],
      ['93.184.216.34', 'public web server'],
      ['9.255.255.255', 'just below 10/8'],
      ['11.0.0.0', 'just above 10/8'],
      ['100.63.255.255', 'just below 100.64/10'],
      ['100.128.0.0', 'just above 100.64/10'],
      ['126.255.255.255', 'just below 127/8'],
      ['128.0.0.0', 'just above 127/8'],
      ['169.253.255.255', 'just below 169.254/16'],
      ['169.255.0.0', 'just above 169.254/16'],
      ['172.15.255.255', 'just below 172.16/12'],
      ['172.32.0.0', 'just above 172.16/12'],
      ['191.255.255.255', 'just below 192.0.0/24'],
      ['192.0.1.0', 'just above 192.0.0/24'],
      ['192.167.255.255', 'just below 192.168/16'],
      ['192.169.0.0', 'just above 192.168/16'],
      ['198.17.255.255', 'just below 198.18/15'],
      ['198.20.0.0', 'just above 198.18/15'],
      ['223.255.255.255', 'just below multicast'],
    ])('allows %s (%s)', (ip) => {
      expect(isForbiddenAddress(ip)).toBe(false);
    });
  });

  describe('IPv6', () => {
    it.each([
      ['::', 'unspecified'],
      ['::1', 'loopback'],
      ['0:0:0:0:0:0:0:1', 'loopback, uncompressed'],
      ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
      ['::ffff:7f00:1', 'IPv4-mapped loopback, hex form'],
      ['::ffff:10.1.2.3', 'IPv4-mapped private'],
      ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
      ['::ffff:0.0.0.0', 'IPv4-mapped "this host"'],
      ['::127.0.0.1', 'deprecated IPv4-compatible'],
      ['::8.8.8.8', 'deprecated IPv4-compatible, even of a public address'],
      ['64:ff9b::127.0.0.1', 'NAT64 of loopback'],
      ['64:ff9b::a9fe:a9fe', 'NAT64 of metadata, hex form'],
      ['64:ff9b::c0a8:101', 'NAT64 of 192.168.1.1'],
      ['64:ff9b:1::808:808', 'local-use NAT64'],
      ['2002:7f00:1::1', '6to4 of loopback'],
      ['2002:a9fe:a9fe::', '6to4 of metadata'],
      ['fc00::1', 'unique local'],
      ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'top of fc00::/7'],
      ['fd00:ec2::254', 'AWS metadata over IPv6'],
      ['fe80::1', 'link-local'],
      ['fe80::1%eth0', 'link-local with a zone id'],
      ['febf:ffff::1', 'top of fe80::/10'],
      ['fec0::1', 'deprecated site-local'],
      ['ff02::1', 'all-nodes multicast'],
      ['ff05::1:3', 'site-local multicast'],
      ['FE80::ABCD', 'uppercase hex'],
    ])('refuses %s (%s)', (ip) => {
      expect(isForbiddenAddress(ip)).toBe(true);
    });

    it.each([
      ['2001:4860:4860::8888', 'public resolver'],
      ['2606:4700:4700::1111', 'public resolver'],
      ['2a00:1450:4001:830::200e', 'public web server'],
      ['::ffff:8.8.8.8', 'IPv4-mapped public'],
      ['::ffff:93.184.216.34', 'IPv4-mapped public'],
      ['64:ff9b::8.8.8.8', 'NAT64 of a public address'],
      ['64:ff9b::808:808', 'NAT64 of a public address, hex form'],
      ['2002:808:808::1', '6to4 of a public address'],
      ['fbff:ffff::1', 'just below fc00::/7'],
      ['fe7f:ffff::1', 'just below fe80::/10'],
      ['::1:0:0:1', 'outside ::/96'],
    ])('allows %s (%s)', (ip) => {
      expect(isForbiddenAddress(ip)).toBe(false);
    });
  });

  it.each([
    ['localhost', 'a host name'],
    ['example.com', 'a public host name'],
    ['', 'empty'],
    ['[::1]', 'a bracketed URL host'],
    ['010.0.0.1', 'a leading-zero quad net.isIP rejects'],
    ['1.2.3', 'a short quad'],
    [' 8.8.8.8', 'surrounding space'],
  ])('fails closed on %j (%s), which is not an IP address', (value) => {
    expect(isForbiddenAddress(value)).toBe(true);
  });
});
