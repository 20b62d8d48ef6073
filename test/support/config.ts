import { loadConfig, type Config, type Json } from '../../src/config.js';

/** The shipped defaults with a configured upstream (so nothing starts the demo), then `overrides`. */
export function testConfig(overrides: Json = {}): Config {
  return loadConfig({}, { upstream: { baseUrl: 'http://upstream.invalid', appKey: 'configured-app-key' }, log: { level: 'silent' } }, overrides);
}

/** The service section of the shipped defaults, with overrides. */
export function testService(overrides: Partial<Config['service']> = {}): Config['service'] {
  return { ...testConfig().service, ...overrides };
}
