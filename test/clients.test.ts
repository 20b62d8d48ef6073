import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, validateConfig, type Json } from '../src/config.js';
import { createClientDirectory } from '../src/deprecation/clients.js';
import { clientFingerprint } from '../src/deprecation/hits.js';

/**
 * The `clients` table (docs/migration.md): who calls, by name, for the hit log and the metrics. The
 * hits and metrics of named clients through the front door are in test/deprecation-hits.test.ts.
 */

const directoryOf = (clients: Json, clientIdKey: string | null = null) => {
  const config = validateConfig({ clients, deprecation: { clientIdKey } });
  return createClientDirectory(config.clients, config.deprecation.clientIdKey);
};

describe('finding the client of a call', () => {
  const identify = directoryOf([
    { name: 'warehouse', team: 'Logistics', contact: 'ops@example.com', apiKeys: ['k-warehouse'] },
    { name: 'shop', fingerprints: [clientFingerprint('k-shop')] },
    { name: 'office', addresses: ['10.1.0.0/16', '2001:db8::/32'] },
    { name: 'lab', addresses: ['10.1.2.3', '192.168.0.0/24'] },
  ]);

  it('by apiKey, by the fingerprint of the key, by address range (IPv4, IPv6 and IPv4 seen by a dual-stack socket)', () => {
    expect(identify('k-warehouse', '203.0.113.9')).toEqual({ name: 'warehouse', label: 'warehouse', fingerprint: clientFingerprint('k-warehouse'), team: 'Logistics', contact: 'ops@example.com' });
    expect(identify('k-shop', null)).toMatchObject({ name: 'shop', label: 'shop', team: null });
    expect(identify(null, '10.1.200.7')).toMatchObject({ name: 'office', fingerprint: 'anonymous' });
    expect(identify('someone', '2001:db8::42')).toMatchObject({ name: 'office', fingerprint: clientFingerprint('someone') });
    expect(identify(null, '::ffff:192.168.0.9')).toMatchObject({ name: 'lab' });
  });

  it('a key of the table wins over an address; where ranges overlap, the client listed first', () => {
    expect(identify('k-shop', '10.1.2.3').name).toBe('shop');
    expect(identify(null, '10.1.2.3').name).toBe('office');
  });

  it('everyone else is named by fingerprint and labelled "other"', () => {
    expect(identify('stranger', '203.0.113.9')).toEqual({ name: clientFingerprint('stranger'), label: 'other', fingerprint: clientFingerprint('stranger'), team: null, contact: null });
    expect(identify(null, null)).toMatchObject({ name: 'anonymous', label: 'other' });
    // Behind a trusted proxy the address is whatever X-Forwarded-For said.
    expect(identify(null, 'not an address')).toMatchObject({ name: 'anonymous', label: 'other' });
  });

  it('with deprecation.clientIdKey, the keys of the table are matched through the same HMAC', () => {
    const keyed = directoryOf([{ name: 'warehouse', apiKeys: ['k-warehouse'] }, { name: 'shop', fingerprints: [clientFingerprint('k-shop', 'secret')] }], 'secret');
    expect(keyed('k-warehouse', null)).toMatchObject({ name: 'warehouse', fingerprint: clientFingerprint('k-warehouse', 'secret') });
    expect(keyed('k-shop', null).name).toBe('shop');
  });
});

describe('the clients table in the configuration', () => {
  it.each<[Json, string]>([
    [[{ name: 'other', apiKeys: ['k'] }], 'clients.0.name must be 1 to 64 letters, digits, "_", "." or "-", other than "other" and not a fingerprint, got "other".'],
    [[{ name: 'sha256:0123456789ab', apiKeys: ['k'] }], 'clients.0.name must be 1 to 64 letters'],
    [[{ name: 'has space', apiKeys: ['k'] }], 'clients.0.name must be 1 to 64 letters'],
    [[{ apiKeys: ['k'] }], 'clients.0.name is required.'],
    [[{ name: 'a', addresses: ['10.0.0.0/33'] }], 'clients.0.addresses.0 must be an IP address or a CIDR range such as "10.1.0.0/16", got "10.0.0.0/33".'],
    [[{ name: 'a', addresses: ['example.com'] }], 'clients.0.addresses.0 must be an IP address or a CIDR range'],
    [[{ name: 'a', fingerprints: ['0123456789ab'] }], 'clients.0.fingerprints.0 must be a fingerprint as the hits show it, e.g. "sha256:0123456789ab", got "0123456789ab".'],
    [[{ name: 'a', apiKey: 'k' }], 'clients.0.apiKey is not a configuration key (did you mean clients.0.apiKeys?).'],
    [[{ name: 'a' }], 'clients entry 1 (a) must list at least one of apiKeys, fingerprints, addresses.'],
    [[{ name: 'a', apiKeys: ['k1'] }, { name: 'a', apiKeys: ['k2'] }], 'clients entry 2 (a) names the name a that entry 1 (a) names; each belongs to one client.'],
    [[{ name: 'a', apiKeys: ['k1'] }, { name: 'b', apiKeys: ['k1'] }], 'clients entry 2 (b) names an apiKey that entry 1 (a) names; each belongs to one client.'],
    [[{ name: 'a', addresses: ['10.0.0.0/8', '10.0.0.0/8'] }], 'clients entry 1 (a) names the address range 10.0.0.0/8 that it names already; each belongs to one client.'],
    [{ name: 'a' }, 'clients must be a list.'],
  ])('refuses %j', (clients, message) => {
    expect(() => validateConfig({ clients })).toThrow(`Invalid configuration: ${message}`);
  });

  it('never quotes an apiKey back', () => {
    expect(() => validateConfig({ clients: [{ name: 'a', apiKeys: ['top-secret'] }, { name: 'b', apiKeys: ['top-secret'] }] })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('top-secret') }),
    );
  });

  it('defaults to no clients, and takes team and contact', () => {
    expect(loadConfig({}).clients).toEqual([]);
    expect(validateConfig({ clients: [{ name: 'a.b_c-1', team: 'T', contact: 'c@example.com', addresses: ['::1'] }] }).clients).toEqual([
      { name: 'a.b_c-1', team: 'T', contact: 'c@example.com', apiKeys: [], fingerprints: [], addresses: ['::1'] },
    ]);
  });
});

describe('npm run fingerprint (node dist/src/fingerprint.js; npm test builds dist/ first)', () => {
  const run = (env: NodeJS.ProcessEnv): Promise<string> =>
    new Promise((resolve, reject) => {
      const child = execFile(process.execPath, ['dist/src/fingerprint.js'], { env: { ...process.env, ...env } }, (err, stdout, stderr) =>
        err ? reject(new Error(stderr)) : resolve(stdout),
      );
      child.stdin!.end('key-one\n\n  key-two  \n');
    });

  it('turns apiKeys on stdin into the fingerprints the hits show, one per line', async () => {
    expect(await run({})).toBe(`${clientFingerprint('key-one')}\n${clientFingerprint('key-two')}\n`);
  });

  it('uses deprecation.clientIdKey from CONFIG_FILE, as the proxy does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fingerprint-'));
    try {
      const file = join(dir, 'config.json');
      writeFileSync(file, JSON.stringify({ deprecation: { clientIdKey: 'secret' } }));
      expect(await run({ CONFIG_FILE: file })).toBe(`${clientFingerprint('key-one', 'secret')}\n${clientFingerprint('key-two', 'secret')}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
