import { isIP } from 'node:net';

/** A `host:port` of the configuration (a sentinel's): the host, an IPv6 address without its brackets, and the port. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** A host name or an IPv4 address: letters, digits, `_`, `.` and `-` (Compose's service names have `_`). */
const HOST_NAME = /^(?!.*\.\.)[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_])?$/;

/** `value` read as `host:port` or `[IPv6]:port`, the port 1 to 65535; null when it is neither. */
export function hostPort(value: string): HostPort | null {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value);
  if (match === null) return null;
  const [, bracketed, plain, portText] = match;
  const port = Number(portText);
  if (port < 1 || port > 65_535) return null;
  if (bracketed !== undefined) return isIP(bracketed) === 6 ? { host: bracketed, port } : null;
  const host = plain ?? '';
  // Digits and dots only is meant as an IPv4 address: "10.0.0.300" is a typo, not a host name.
  if (!HOST_NAME.test(host) || (/^[\d.]+$/.test(host) && isIP(host) !== 4)) return null;
  return { host, port };
}
