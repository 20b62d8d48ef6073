import { loadConfig } from '../../src/config/load.js';
import type { Json } from '../../src/config/validate.js';
import type { Config } from '../../src/config/schema.js';

/** A deprecation.clientIdKey for tests that configure one (32 characters, the least accepted). */
export const TEST_CLIENT_ID_KEY = 'test-client-id-key-0123456789abc';

/**
 * The shipped defaults with a configured upstream (so nothing starts the demo), then `overrides`. The
 * page cache is off unless `overrides` turn it on: these tests count the upstream requests of each
 * call, and make an upstream fail after it answered (test/page-cache.test.ts tests the cache).
 */
export function testConfig(overrides: Json = {}): Config {
  return loadConfig(
    {},
    { upstream: { baseUrl: 'http://upstream.invalid', appKey: 'configured-app-key' }, log: { level: 'silent' }, cache: { enabled: false } },
    overrides,
  );
}

/** The service section of the shipped defaults, with overrides. */
export function testService(overrides: Partial<Config['service']> = {}): Config['service'] {
  return { ...testConfig().service, ...overrides };
}
