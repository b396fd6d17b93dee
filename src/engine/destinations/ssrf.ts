import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { buildConnector } from 'undici';

/**
 * Outbound safety. Webhook URLs are chosen by API users, so without a guard any of them could make
 * the service POST into its own network (a database admin page, the cloud metadata service at
 * 169.254.169.254). The check runs on the address actually connected to, after DNS resolution and
 * at connect time, so a public name that resolves to 127.0.0.1 (or is re-pointed there later) is
 * refused too. `SVC_ALLOW_PRIVATE_TARGETS=1` turns it off, for local development only.
 */

const RANGES: [address: string, prefix: number, family: 'ipv4' | 'ipv6', reason: string][] = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'reserved'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['255.255.255.255', 32, 'ipv4', 'broadcast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['fc00::', 7, 'ipv6', 'private'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'site-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

// The first matching range names the reason.
const LISTS = RANGES.map(([address, prefix, family, reason]) => {
  const list = new BlockList();
  list.addSubnet(address, prefix, family);
  return { list, family, reason };
});

/**
 * IPv6 forms that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`)
 * reach that IPv4 address, so they are judged by it. The URL parser writes any spelling of an
 * IPv6 address in its one canonical form, which the patterns below then read.
 */
function embeddedIPv4(ipv6: string): string | null {
  const canonical = new URL(`http://[${ipv6}]/`).hostname.slice(1, -1);
  const match = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!match) return null;
  const high = parseInt(match[1], 16);
  const low = parseInt(match[2], 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/**
 * Why an address must not be connected to (`loopback`, `private`, `link-local`, ...), or null for a
 * public address. Anything that is not an IP address at all is refused as `invalid`.
 */
export function classifyAddress(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return 'invalid';
  if (family === 6) {
    const v4 = embeddedIPv4(address);
    if (v4 !== null) return classifyAddress(v4);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const { list, family: listFamily, reason } of LISTS) {
    if (listFamily === type && list.check(address, type)) return reason;
  }
  return null;
}

export class RefusedAddressError extends Error {
  readonly code = 'ESVC_REFUSED_ADDRESS';
  constructor(host: string, address: string, reason: string) {
    super(
      host === address
        ? `refused to connect to ${address} (${reason} address)`
        : `refused to connect to ${host}: it resolves to ${address} (${reason} address)`,
    );
  }
}

/** The URL check done before any connection: only https, unless private targets are allowed. */
export function checkTargetUrl(url: string, allowPrivateTargets: boolean): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'refused: the endpoint URL is not a valid URL';
  }
  if (parsed.protocol === 'https:') return null;
  if (parsed.protocol === 'http:' && allowPrivateTargets) return null;
  return `refused: only https:// endpoint URLs are allowed, got ${parsed.protocol}//`;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `net.connect` lookup that resolves as usual and keeps only public addresses; when none is left
 * the connection fails with a RefusedAddressError naming the host and what it resolved to.
 */
export function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, options.all ? [] : '', 0);
    const allowed = addresses.filter((a) => classifyAddress(a.address) === null);
    if (allowed.length === 0) {
      const first = addresses[0];
      const refused = new RefusedAddressError(hostname, first?.address ?? '?', first ? classifyAddress(first.address)! : 'no');
      return callback(refused, options.all ? [] : '', 0);
    }
    if (options.all) return callback(null, allowed);
    callback(null, allowed[0].address, allowed[0].family);
  });
}

/**
 * The connector of the delivery Agent. Node skips `lookup` for a literal IP host, so literal
 * addresses are classified here before connecting; names go through `guardedLookup`.
 */
export function guardedConnector(options: buildConnector.BuildOptions): buildConnector.connector {
  const connect = buildConnector({ ...options, lookup: guardedLookup } as buildConnector.BuildOptions);
  return (target, callback) => {
    const host = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname;
    if (isIP(host) !== 0) {
      const reason = classifyAddress(host);
      if (reason !== null) return callback(new RefusedAddressError(host, host, reason), null);
    }
    connect(target, callback);
  };
}
