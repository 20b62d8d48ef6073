import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import { validateConfig, type Json } from '../src/config/validate.js';

/** Start-up refuses a bad configuration with a message that names the key and what is wrong. */

const attempt = (overrides: Json) => () => loadConfig({}, overrides);

describe('configuration validation', () => {
  it('accepts the shipped defaults', () => {
    expect(loadConfig({}).upstream.baseUrl).toBeNull();
  });

  it.each([
    [{ deprecation: { deprecatedAt: '2026-01-01T00:00:00' } }, 'deprecation.deprecatedAt must be an ISO 8601 date and time with an offset'],
    [{ deprecation: { sunsetAt: 'next year' } }, 'deprecation.sunsetAt must be an ISO 8601 date and time with an offset'],
    [{ deprecation: { sunsetAt: '2025-01-01T00:00:00Z' } }, 'deprecation.sunsetAt must not be earlier than deprecation.deprecatedAt'],
    [{ upstream: { baseUrl: 'http://upstream.example/api?x=1' } }, 'upstream.baseUrl must not have a query or fragment'],
    [{ server: { publicBaseUrl: 'https://legacy.example/#top' } }, 'server.publicBaseUrl must not have a query or fragment'],
    [{ upstream: { apiKeyMode: 'map' } }, 'upstream.apiKeyMap must map at least one apiKey when upstream.apiKeyMode is "map".'],
    [{ upstream: { apiKeyMode: 'fixed' } }, 'upstream.appKey must be set when upstream.apiKeyMode is "fixed".'],
    [{ upstream: { apiKeyMode: 'sometimes' } }, 'upstream.apiKeyMode must be one of "forward", "map", "fixed", got "sometimes".'],
    [{ upstream: { callTimeoutMs: 60_000 } }, 'server.shutdownGraceMs must be at least upstream.callTimeoutMs (60000)'],
    [{ paging: { legacyPageIndexBase: 2 } }, 'paging.legacyPageIndexBase must be one of 0, 1, got 2.'],
    [{ paging: { storeLookupPageSize: 500 } }, 'paging.storeLookupPageSize must not exceed the maximum page size'],
    [{ mapping: { merchandise: { mug: 'Mug' } } }, 'mapping.merchandise.mug must be keyed by a non-negative merchandise id.'],
    [{ server: { servicePath: 'index.asmx' } }, 'server.servicePath must be one path segment'],
    [{ upstrem: { baseUrl: 'http://upstream.example' } }, 'upstrem is not a configuration key (did you mean upstream?).'],
    [{ upstream: { baseURL: 'http://upstream.example' } }, 'upstream.baseURL is not a configuration key (did you mean upstream.baseUrl?).'],
    [{ log: { levle: 'debug' } }, 'log.levle is not a configuration key (did you mean log.level?).'],
    [{ server: { prot: 8080 } }, 'server.prot is not a configuration key (did you mean server.port?).'],
    // biome-ignore lint/correctness/noPrecisionLoss: a number too large for a double is the point: JSON can carry one.
    [{ server: { port: 1e400 } }, 'server.port must be a whole number from 0 to 65535, got Infinity.'],
    [
      { server: { adminPort: 8080 } },
      'server.adminPort must differ from server.port (8080): the operator endpoints have a listener of their own.',
    ],
    [
      { server: { adminPort: 'admin' } },
      'server.adminPort must be a port number (0 to 65535) or null for no operator listener, got "admin".',
    ],
    [
      { server: { operatorOnServicePort: ['/healthz'] } },
      'server.operatorOnServicePort.0 must be one of "/metrics", "/ledger", "/clients", got "/healthz".',
    ],
    [{ server: { operatorOnServicePort: ['/metrics', '/metrics'] } }, 'server.operatorOnServicePort must not name a value twice.'],
    [
      { upstream: { apiKeyMode: 'map', apiKeyMap: { 'Legacy-Secret-Key-123': 5 } } },
      'upstream.apiKeyMap.<an apiKey> must be a non-empty string.',
    ],
    [{ deprecation: { clientIdKey: 'too-short-to-be-a-key' } }, 'deprecation.clientIdKey must be at least 32 characters long.'],
    [
      { deprecation: { clientIdKey: 'ab'.repeat(20) } },
      'deprecation.clientIdKey must be a random key, not a repeated pattern (fewer than 8 different characters)',
    ],
    [{ server: { trustProxy: 'yes' } }, 'server.trustProxy must be true, false or the number of proxies in front (1 to 16), got "yes".'],
    [{ server: { trustProxy: 0 } }, 'server.trustProxy must be true, false or the number of proxies in front (1 to 16), got 0.'],
    [{ upstream: { baseUrl: 'ftp://upstream.example' } }, 'upstream.baseUrl must be an http or https URL, got "ftp://upstream.example".'],
    [
      { upstream: { baseUrl: 'http://us%E0:pass@upstream.example/' } },
      'upstream.baseUrl must have its user name and password %-encoded, got "http://***@upstream.example/".',
    ],
    [
      { paging: { profiles: { '/product.search.cp': { pageSize: 'size' } } } },
      'paging.profiles./product.search.cp.pageSize is not a configuration key.',
    ],
    [{ paging: { profiles: { '/product.search': { maxPageSize: 50 } } } }, 'paging.profiles./product.search is not a configuration key.'],
  ])('%j is refused', (overrides, message) => {
    expect(attempt(overrides)).toThrow(`Invalid configuration: ${message}`);
  });

  it('accepts any key in the tables keyed by data', () => {
    const config = loadConfig({}, { upstream: { apiKeyMode: 'map', apiKeyMap: { 'Legacy Key': 'app-key' } } });
    expect(config.upstream.apiKeyMap).toEqual({ 'Legacy Key': 'app-key' });
  });

  it('never quotes a key of the configuration back: not an apiKeyMap entry, nor the text near a JSON error', () => {
    expect(() => loadConfig({}, { upstream: { apiKeyMode: 'map', apiKeyMap: { 'Legacy-Secret-Key-123': '' } } })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('Legacy-Secret') }),
    );
    const file = join(mkdtempSync(join(tmpdir(), 'config-json-')), 'proxy.json');
    writeFileSync(file, '{"upstream":{"apiKeyMode":"fixed","appKey":SuperSecretAppKey}}');
    expect(() => loadConfig({ CONFIG_FILE: file })).toThrow(
      new RegExp(`^Invalid configuration: CONFIG_FILE is not valid JSON \\(${file}(: line 1, column \\d+)?\\)\\.$`),
    );
    expect(() => loadConfig({ CONFIG_FILE: file })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('SuperSecre') }),
    );
  });

  it('never shows a key in the query of a refused URL, in any case or escape (review of issue 27)', () => {
    for (const url of [
      'http://h.example/x?apiKey=Secret-Key-One',
      'ftp://h.example/?x=1&APPKEY=Secret-Key-One',
      'http://h/?ap%69Key=Secret-Key-One',
    ]) {
      let message = '';
      try {
        loadConfig({ UPSTREAM_URL: url });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/^Invalid configuration: UPSTREAM_URL/);
      expect(message).not.toContain('Secret-Key-One');
    }
  });

  it('never shows the credentials of a refused URL', () => {
    expect(() => loadConfig({ UPSTREAM_URL: 'ftp://user:s3cret-pass@example.com/api' })).toThrow(
      'Invalid configuration: UPSTREAM_URL (upstream.baseUrl) must be an http or https URL, got "ftp://***@example.com/api".',
    );
    // A password with an unencoded `/` or `?` is still a password.
    expect(() => loadConfig({ UPSTREAM_URL: 'http://user:pa/ss?@example.com/api?x=1' })).toThrow(
      'Invalid configuration: UPSTREAM_URL (upstream.baseUrl) must be an absolute http(s) URL, got "http://***@example.com/api?x=1".',
    );
  });

  it('takes REDIS_URL as redis.url, a redis:// or rediss:// URL, and never shows its password', () => {
    expect(loadConfig({ REDIS_URL: 'redis://:pw@10.0.0.5:6380/2' }).redis.url).toBe('redis://:pw@10.0.0.5:6380/2');
    expect(loadConfig({ REDIS_URL: 'rediss://cache.internal' }).redis.url).toBe('rediss://cache.internal');
    expect(() => loadConfig({ REDIS_URL: 'http://user:s3cret-pass@cache.internal' })).toThrow(
      'Invalid configuration: REDIS_URL (redis.url) must be a redis:// or rediss:// URL, got "http://***@cache.internal".',
    );
    expect(() => loadConfig({ REDIS_URL: '' })).toThrow('REDIS_URL');
  });

  it('takes REDIS_SECRET as redis.secret, a random key of 32 characters or more, never shown', () => {
    const secret = 'f3a9c1d27b8e4560a1b2c3d4e5f60718';
    expect(loadConfig({ REDIS_SECRET: secret }).redis.secret).toBe(secret);
    expect(loadConfig({}).redis.secret).toBeNull();
    const refusal = (value: string): string => {
      try {
        loadConfig({ REDIS_SECRET: value });
      } catch (err) {
        return (err as Error).message;
      }
      return 'taken';
    };
    expect(refusal('short-secret-not-random')).toBe(
      'Invalid configuration: REDIS_SECRET (redis.secret) must be at least 32 characters long.',
    );
    expect(refusal('xy'.repeat(20))).toContain('REDIS_SECRET (redis.secret) must be a random key, not a repeated pattern');
    expect(refusal('xy'.repeat(20))).not.toContain('xyxy');
  });

  describe('every secret from a file too (NAME_FILE, less its final newline), one way only', () => {
    const dir = mkdtempSync(join(tmpdir(), 'catalog-secrets-'));
    const key = 'f3a9c1d27b8e4560a1b2c3d4e5f60718';
    const sentinels = { REDIS_SENTINELS: '10.0.0.7:26379', REDIS_MASTER_NAME: 'mymaster' };
    it.each([
      ['CLIENT_ID_KEY', {}, (config: Config) => config.deprecation.clientIdKey, key],
      ['REDIS_SECRET', {}, (config: Config) => config.redis.secret, key],
      // A single Redis's password is in its URL.
      ['REDIS_URL', {}, (config: Config) => config.redis.url, `redis://:${key}@cache.internal:6379`],
      ['REDIS_PASSWORD', sentinels, (config: Config) => config.redis.password, key],
      ['REDIS_SENTINEL_PASSWORD', sentinels, (config: Config) => config.redis.sentinelPassword, key],
    ] as const)('%s_FILE', (name, base, read, secret) => {
      const file = join(dir, name.toLowerCase());
      writeFileSync(file, `${secret}\n`);
      expect(read(loadConfig({ ...base, [`${name}_FILE`]: file }))).toBe(secret);
      expect(read(loadConfig({ ...base, [name]: secret }))).toBe(secret);
      expect(() => loadConfig({ ...base, [name]: secret, [`${name}_FILE`]: file })).toThrow(
        `${name}_FILE and ${name} are both set; give it one way only.`,
      );
      expect(() => loadConfig({ ...base, [`${name}_FILE`]: join(dir, 'none') })).toThrow(
        `${name}_FILE names a file that cannot be read (${join(dir, 'none')}: ENOENT).`,
      );
    });
  });

  describe('Redis Sentinel (redis.sentinels)', () => {
    const refusal = (env: NodeJS.ProcessEnv, ...overrides: Json[]): string => {
      try {
        loadConfig(env, ...overrides);
      } catch (err) {
        return (err as Error).message;
      }
      return 'taken';
    };
    const sentinelEnv = {
      REDIS_SENTINELS: 'sentinel-1.internal:26379, 10.0.0.7:26380,[2001:db8::1]:26381,',
      REDIS_MASTER_NAME: 'mymaster',
    };

    it('takes REDIS_SENTINELS as a comma list, REDIS_MASTER_NAME, REDIS_PASSWORD and REDIS_SENTINEL_PASSWORD', () => {
      const { redis } = loadConfig({ ...sentinelEnv, REDIS_PASSWORD: 'master-pw', REDIS_SENTINEL_PASSWORD: 'sentinel-pw' });
      expect(redis).toMatchObject({
        url: null,
        sentinels: ['sentinel-1.internal:26379', '10.0.0.7:26380', '[2001:db8::1]:26381'],
        masterName: 'mymaster',
        password: 'master-pw',
        sentinelPassword: 'sentinel-pw',
        tls: false,
      });
      expect(loadConfig({}).redis).toMatchObject({ sentinels: [], masterName: null, password: null, sentinelPassword: null, tls: false });
      expect(loadConfig({}, { redis: { sentinels: ['10.0.0.7:26379'], masterName: 'm', tls: true } }).redis.tls).toBe(true);
    });

    it('refuses sentinels without the master name', () => {
      expect(refusal({ REDIS_SENTINELS: '10.0.0.7:26379' })).toBe(
        'Invalid configuration: redis.masterName must be set with redis.sentinels: the name the sentinels monitor the master under ' +
          '(`sentinel monitor <name> …`).',
      );
    });

    it('refuses a REDIS_SENTINELS of commas alone, as it refuses one set but empty', () => {
      expect(refusal({ REDIS_SENTINELS: ' , ' })).toBe(
        'Invalid configuration: REDIS_SENTINELS is set but lists nothing; unset it or give it a value.',
      );
    });

    it('refuses both redis.url and redis.sentinels: neither wins', () => {
      expect(refusal({ ...sentinelEnv, REDIS_URL: 'redis://:url-secret@cache.internal:6379' })).toBe(
        'Invalid configuration: REDIS_SENTINELS (redis.sentinels) must be empty when redis.url is set: name Redis one way, by its URL ' +
          'or by its sentinels, not both.',
      );
    });

    it.each([
      'sentinel-1.internal',
      'sentinel-1.internal:0',
      'sentinel-1.internal:65536',
      'sentinel-1.internal:port',
      '2001:db8::1:26379',
      '[2001:db8::1]',
      '[sentinel-1]:26379',
      '10.0.0.300:26379',
      'sentinel..internal:26379',
      'redis://sentinel-1:26379',
    ])('refuses the sentinel %j, naming REDIS_SENTINELS and the entry', (sentinel) => {
      expect(refusal({ REDIS_SENTINELS: `10.0.0.7:26379,${sentinel}`, REDIS_MASTER_NAME: 'mymaster' })).toBe(
        'Invalid configuration: REDIS_SENTINELS (redis.sentinels.1) must be a host and a port from 1 to 65535, such as ' +
          `"sentinel-1.internal:26379" or "[2001:db8::1]:26379", got ${JSON.stringify(sentinel)}.`,
      );
    });

    it('refuses a sentinel named twice', () => {
      expect(refusal({ REDIS_SENTINELS: '10.0.0.7:26379,10.0.0.7:26379', REDIS_MASTER_NAME: 'mymaster' })).toBe(
        'Invalid configuration: REDIS_SENTINELS (redis.sentinels) must not name a value twice.',
      );
    });

    it('refuses the settings of Sentinel without sentinels, never showing a password', () => {
      const withUrl = refusal({ REDIS_URL: 'redis://cache.internal:6379', REDIS_PASSWORD: 'S3cret-master-pw' });
      expect(withUrl).toBe(
        'Invalid configuration: REDIS_PASSWORD (redis.password) must be unset without redis.sentinels: it is for Redis Sentinel only ' +
          '(with redis.url, the password goes in the URL: redis://:password@host:6379).',
      );
      expect(refusal({ REDIS_SENTINEL_PASSWORD: 'S3cret-sentinel-pw' })).toBe(
        'Invalid configuration: REDIS_SENTINEL_PASSWORD (redis.sentinelPassword) must be unset without redis.sentinels: it is for ' +
          'Redis Sentinel only.',
      );
      expect(refusal({ REDIS_MASTER_NAME: 'mymaster' })).toContain('REDIS_MASTER_NAME (redis.masterName) must be unset without');
      expect(refusal({}, { redis: { url: 'redis://cache.internal', tls: true } })).toContain(
        'redis.tls must be unset without redis.sentinels: it is for Redis Sentinel only (with redis.url, TLS is the rediss:// scheme).',
      );
      // A password of the wrong type is refused without being quoted.
      const wrongType = refusal({}, { redis: { sentinels: ['10.0.0.7:26379'], masterName: 'm', password: ['S3cret-in-a-list'] } });
      expect(wrongType).toMatch(/^Invalid configuration: redis\.password /);
      expect(wrongType).not.toContain('S3cret');
    });
  });

  it('ships config/default.json equal to the defaults of the schema', () => {
    const shipped = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'config', 'default.json'), 'utf8')) as Json;
    expect(shipped).toEqual(validateConfig({}));
  });

  it('normalises sort table keys the way legacy values are read', () => {
    const config = loadConfig({}, { mapping: { sort: { 'by-newest': 'by_date_desc' } } });
    expect(config.mapping.sort).toEqual({ by_newest: 'by_date_desc' });
  });

  it('keeps a base URL path, without its trailing slash', () => {
    expect(loadConfig({ UPSTREAM_URL: 'https://api.example/v3/' }).upstream.baseUrl).toBe('https://api.example/v3');
  });
});
