import { loadConfig } from '../../src/config/load.js';
import type { Json } from '../../src/config/validate.js';
import { createOperatorLogger } from '../../src/start/loggers.js';
import { start, type Running } from '../../src/start/main.js';
import { logInMemory } from './log-check.js';

/** A proxy started in the test's process, with the lines it logged (operators' lines and hits, as in production). */
export interface TestProxy extends Running {
  readonly log: readonly string[];
}

/**
 * The whole product as `npm start` runs it (the embedded demo upstream included, since no upstream
 * is configured), on an ephemeral loopback port. `overrides` are merged over the defaults of the
 * configuration schema (src/config/schema.ts). Its log is kept in memory, written by the production
 * logger, for tests that check it (test/support/log-check.ts).
 */
export async function startProxy(overrides: Json = {}): Promise<TestProxy> {
  const config = loadConfig({}, { server: { host: '127.0.0.1', port: 0, adminPort: 0 }, log: { level: 'silent' } }, overrides);
  const { stream, lines } = logInMemory();
  const running = await start(config, createOperatorLogger('info', stream));
  return Object.assign(running, { log: lines });
}

/** The product with an upstream that refuses connections (port 1 on loopback), for the server faults it gives. */
export function startUnreachableProxy(): Promise<TestProxy> {
  return startProxy({ upstream: { baseUrl: 'http://127.0.0.1:1', connectTimeoutMs: 500 } });
}
