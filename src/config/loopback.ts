import { BlockList, isIP } from 'node:net';
import type { Config } from './schema.js';

/** 127.0.0.0/8 and ::1, in every spelling an address has (`0:0:0:0:0:0:0:1`, `::ffff:127.0.0.1`). */
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
LOOPBACK.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/**
 * Whether a listener on `host` is reachable from this machine only: `localhost` or a loopback address.
 * A host name other than `localhost` is not: what it resolves to is DNS's to say, not the configuration's.
 */
/** Whether the operator listener leaves loopback with no token to ask for. */
export function adminUnguarded({ adminPort, adminHost, adminToken }: Config['server']): boolean {
  return adminPort !== null && adminToken === null && !isLoopback(adminHost);
}

export function isLoopback(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const version = isIP(host);
  return version !== 0 && LOOPBACK.check(host, version === 4 ? 'ipv4' : 'ipv6');
}
