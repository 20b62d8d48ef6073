import { BlockList, isIP } from 'node:net';
import type { Config } from '../config/schema.js';
import { ipRange } from '../config/problems.js';
import { clientFingerprint } from './fingerprint.js';

/**
 * Who a call came from, in the migration's words (docs/migration.md): a client of the `clients`
 * table, found by its apiKey, by the fingerprint of that key or by the address it calls from; or,
 * for everyone else, the fingerprint of the key they sent. Keys themselves go no further than here.
 */
export interface Caller {
  /** The client's name, or the fingerprint for a caller not in the table (`anonymous` without a key). */
  readonly name: string;
  /** The bounded `client` label of the metrics: the name of a configured client, else `other`. */
  readonly label: string;
  readonly fingerprint: string;
  readonly team: string | null;
  readonly contact: string | null;
}

export type ClientDirectory = (apiKey: string | null, remoteAddress: string | null) => Caller;

/** The metric label of every caller the `clients` table does not name. */
export const OTHER_CLIENTS = 'other';

type ClientSettings = Config['clients'][number];

export function createClientDirectory(clients: Config['clients'], fingerprintKey: string | null): ClientDirectory {
  const byIdentity = new Map<string, ClientSettings>();
  for (const client of clients) {
    for (const key of client.apiKeys) byIdentity.set(clientFingerprint(key, fingerprintKey), client);
    for (const fingerprint of client.fingerprints) byIdentity.set(fingerprint, client);
  }
  // In table order: where ranges overlap, the first client listed wins.
  const byAddress = clients
    .filter((client) => client.addresses.length > 0)
    .map((client) => ({ client, ranges: blockListOf(client.addresses) }));

  return (apiKey, remoteAddress) => {
    const fingerprint = clientFingerprint(apiKey, fingerprintKey);
    const client = byIdentity.get(fingerprint) ?? addressOwner(byAddress, remoteAddress);
    if (client === undefined) return { name: fingerprint, label: OTHER_CLIENTS, fingerprint, team: null, contact: null };
    return { name: client.name, label: client.name, fingerprint, team: client.team, contact: client.contact };
  };
}

function blockListOf(ranges: readonly string[]): BlockList {
  const list = new BlockList();
  for (const text of ranges) {
    // The schema has checked every range (format `ip-range`).
    const { address, family, prefix } = ipRange(text)!;
    list.addSubnet(address, prefix, family);
  }
  return list;
}

function addressOwner(
  byAddress: readonly { client: ClientSettings; ranges: BlockList }[],
  remoteAddress: string | null,
): ClientSettings | undefined {
  if (remoteAddress === null || byAddress.length === 0) return undefined;
  // A dual-stack socket reports IPv4 callers as `::ffff:a.b.c.d`; the table writes them as IPv4.
  const address = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(remoteAddress)?.[1] ?? remoteAddress;
  // Behind trusted proxies the address comes from X-Forwarded-For (the entry the nearest one appended:
  // server.trustProxy counts the hops), which a broken proxy may fill with anything.
  const version = isIP(address);
  if (version === 0) return undefined;
  return byAddress.find(({ ranges }) => ranges.check(address, version === 4 ? 'ipv4' : 'ipv6'))?.client;
}
