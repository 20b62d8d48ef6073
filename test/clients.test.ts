import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import { validateConfig, type Json } from '../src/config/validate.js';
import { createClientDirectory } from '../src/clients/directory.js';
import { clientFingerprint as fingerprintOf } from '../src/clients/fingerprint.js';
import { TEST_CLIENT_ID_KEY } from './support/config.js';

/**
 * The `clients` table (docs/migration.md): who calls, by name, for the hit log and the metrics. The
 * hits and metrics of named clients through the front door are in test/deprecation-hits.test.ts.
 */

const directoryOf = (clients: Json, clientIdKey: string | null = null) => {
  const config = validateConfig({ clients, deprecation: { clientIdKey } });
  return createClientDirectory(config.clients, config.deprecation.clientIdKey);
};

describe('finding the client of a call', () => {
  const KEY = TEST_CLIENT_ID_KEY;
  const clientFingerprint = (apiKey: string): string => fingerprintOf(apiKey, KEY);
  const identify = directoryOf(
    [
      { name: 'warehouse', team: 'Logistics', contact: 'ops@example.com', apiKeys: ['k-warehouse'] },
      { name: 'shop', fingerprints: [clientFingerprint('k-shop')] },
      { name: 'office', addresses: ['10.1.0.0/16', '2001:db8::/32'] },
      { name: 'lab', addresses: ['10.1.2.3', '192.168.0.0/24'] },
    ],
    KEY,
  );

  it('by apiKey, by the fingerprint of the key, by address range (IPv4, IPv6 and IPv4 seen by a dual-stack socket)', () => {
    expect(identify('k-warehouse', '203.0.113.9')).toEqual({
      name: 'warehouse',
      label: 'warehouse',
      fingerprint: clientFingerprint('k-warehouse'),
      team: 'Logistics',
      contact: 'ops@example.com',
    });
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
    expect(identify('stranger', '203.0.113.9')).toEqual({
      name: clientFingerprint('stranger'),
      label: 'other',
      fingerprint: clientFingerprint('stranger'),
      team: null,
      contact: null,
    });
    expect(identify(null, null)).toMatchObject({ name: 'anonymous', label: 'other' });
    // Behind a trusted proxy the address is whatever X-Forwarded-For said.
    expect(identify(null, 'not an address')).toMatchObject({ name: 'anonymous', label: 'other' });
  });

  it('with another deprecation.clientIdKey, the same keys of the table are matched through that HMAC', () => {
    const other = 'another-client-id-key-0123456789';
    const keyed = directoryOf(
      [
        { name: 'warehouse', apiKeys: ['k-warehouse'] },
        { name: 'shop', fingerprints: [fingerprintOf('k-shop', other)] },
      ],
      other,
    );
    expect(keyed('k-warehouse', null)).toMatchObject({ name: 'warehouse', fingerprint: fingerprintOf('k-warehouse', other) });
    expect(keyed('k-shop', null).name).toBe('shop');
    expect(identify('k-shop', null).fingerprint).not.toBe(keyed('k-shop', null).fingerprint);
  });

  it(
    'without deprecation.clientIdKey, apiKeys of the table still match (through the process key), and listed fingerprints are ' + 'refused',
    () => {
      expect(directoryOf([{ name: 'warehouse', apiKeys: ['k-warehouse'] }])('k-warehouse', null).name).toBe('warehouse');
      expect(() => directoryOf([{ name: 'shop', fingerprints: [clientFingerprint('k-shop')] }])).toThrow(
        'Invalid configuration: clients list fingerprints, which need deprecation.clientIdKey: without it each process keys the ' +
          'fingerprints with a random key of its own, which no listed fingerprint matches.',
      );
    },
  );
});

describe('the clients table in the configuration', () => {
  it.each<[Json, string]>([
    [
      [{ name: 'other', apiKeys: ['k'] }],
      'clients.0.name must be 1 to 64 letters, digits, "_", "." or "-", other than "other" and "anonymous" and not a fingerprint, ' +
        'got "other".',
    ],
    // The name the ledger gives calls without a key: a client so named would be shown theirs.
    [
      [{ name: 'anonymous', apiKeys: ['k'] }],
      'clients.0.name must be 1 to 64 letters, digits, "_", "." or "-", other than "other" and "anonymous" and not a fingerprint, ' +
        'got "anonymous".',
    ],
    [[{ name: 'sha256:0123456789ab', apiKeys: ['k'] }], 'clients.0.name must be 1 to 64 letters'],
    [[{ name: 'has space', apiKeys: ['k'] }], 'clients.0.name must be 1 to 64 letters'],
    [[{ apiKeys: ['k'] }], 'clients.0.name is required.'],
    [
      [{ name: 'a', addresses: ['10.0.0.0/33'] }],
      'clients.0.addresses.0 must be an IP address or a CIDR range such as "10.1.0.0/16", got "10.0.0.0/33".',
    ],
    [[{ name: 'a', addresses: ['example.com'] }], 'clients.0.addresses.0 must be an IP address or a CIDR range'],
    [
      [{ name: 'a', fingerprints: ['0123456789ab'] }],
      'clients.0.fingerprints.0 must be a fingerprint as the hits show it, e.g. "hmac:0123456789ab", got "0123456789ab".',
    ],
    [
      [{ name: 'a', fingerprints: ['sha256:0123456789ab'] }],
      'clients.0.fingerprints.0 must be a fingerprint as the hits show it, e.g. "hmac:0123456789ab", got "sha256:0123456789ab".',
    ],
    [[{ name: 'a', apiKey: 'k' }], 'clients.0.apiKey is not a configuration key (did you mean clients.0.apiKeys?).'],
    [[{ name: 'a' }], 'clients entry 1 (a) must list at least one of apiKeys, fingerprints, addresses.'],
    [
      [
        { name: 'a', apiKeys: ['k1'] },
        { name: 'a', apiKeys: ['k2'] },
      ],
      'clients entry 2 (a) names the name a that entry 1 (a) names; each belongs to one client.',
    ],
    [
      [
        { name: 'a', apiKeys: ['k1'] },
        { name: 'b', apiKeys: ['k1'] },
      ],
      'clients entry 2 (b) names an apiKey that entry 1 (a) names; each belongs to one client.',
    ],
    [
      [{ name: 'a', addresses: ['10.0.0.0/8', '10.0.0.0/8'] }],
      'clients entry 1 (a) names the address range 10.0.0.0/8 that it names already; each belongs to one client.',
    ],
    [{ name: 'a' }, 'clients must be a list.'],
  ])('refuses %j', (clients, message) => {
    expect(() => validateConfig({ clients })).toThrow(`Invalid configuration: ${message}`);
  });

  it('never quotes an apiKey back', () => {
    expect(() =>
      validateConfig({
        clients: [
          { name: 'a', apiKeys: ['top-secret'] },
          { name: 'b', apiKeys: ['top-secret'] },
        ],
      }),
    ).toThrow(expect.objectContaining({ message: expect.not.stringContaining('top-secret') }));
  });

  it('defaults to no clients, and takes team and contact', () => {
    expect(loadConfig({}).clients).toEqual([]);
    expect(validateConfig({ clients: [{ name: 'a.b_c-1', team: 'T', contact: 'c@example.com', addresses: ['::1'] }] }).clients).toEqual([
      { name: 'a.b_c-1', team: 'T', contact: 'c@example.com', apiKeys: [], fingerprints: [], addresses: ['::1'] },
    ]);
  });
});

describe('npm run fingerprint (node dist/src/bin/fingerprint.js; npm test builds dist/ first)', () => {
  const run = (env: NodeJS.ProcessEnv): Promise<string> =>
    new Promise((resolve, reject) => {
      const child = execFile(
        process.execPath,
        ['dist/src/bin/fingerprint.js'],
        { env: { ...process.env, ...env } },
        (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout)),
      );
      child.stdin!.end('key-one\n\n  key-two  \n');
    });

  it('turns apiKeys on stdin into the fingerprints the hits show with CLIENT_ID_KEY, one per line', async () => {
    expect(await run({ CLIENT_ID_KEY: TEST_CLIENT_ID_KEY })).toBe(
      `${fingerprintOf('key-one', TEST_CLIENT_ID_KEY)}\n${fingerprintOf('key-two', TEST_CLIENT_ID_KEY)}\n`,
    );
  });

  it('uses deprecation.clientIdKey from CONFIG_FILE, as the proxy does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fingerprint-'));
    try {
      const file = join(dir, 'config.json');
      writeFileSync(file, JSON.stringify({ deprecation: { clientIdKey: TEST_CLIENT_ID_KEY } }));
      expect(await run({ CONFIG_FILE: file })).toBe(
        `${fingerprintOf('key-one', TEST_CLIENT_ID_KEY)}\n${fingerprintOf('key-two', TEST_CLIENT_ID_KEY)}\n`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses without deprecation.clientIdKey: no fingerprint it printed would match a proxy keyed at random', async () => {
    await expect(run({ CLIENT_ID_KEY: '' })).rejects.toThrow('Invalid configuration: CLIENT_ID_KEY is set but empty');
    const { CLIENT_ID_KEY: _unset, ...without } = process.env;
    const refused = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ['dist/src/bin/fingerprint.js'], { env: without }, (err, stdout, stderr) =>
        resolve({ code: err ? (err.code as number) : 0, stdout, stderr }),
      );
      child.stdin!.end('key-one\n');
    });
    expect(refused).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Invalid configuration: CLIENT_ID_KEY or CLIENT_ID_KEY_FILE (deprecation.clientIdKey) is not set: the proxy then keys ' +
        'fingerprints with a random key of each process, which no fingerprint printed here would match. Set it as the proxy has it.\n',
    });
  });
});
