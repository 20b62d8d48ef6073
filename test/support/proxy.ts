import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.js';
import type { Json } from '../../src/config/validate.js';
import { start, type Running } from '../../src/start/main.js';

/**
 * The whole product as `npm start` runs it (the embedded demo upstream included, since no upstream
 * is configured), on an ephemeral loopback port. `overrides` are merged over the defaults of the
 * configuration schema (src/config/schema.ts).
 */
export async function startProxy(overrides: Json = {}): Promise<Running> {
  const config = loadConfig({}, { server: { host: '127.0.0.1', port: 0, adminPort: 0 }, log: { level: 'silent' } }, overrides);
  return start(config, pino({ level: 'silent' }));
}

/** The product with an upstream that refuses connections (port 1 on loopback), for the server faults it gives. */
export function startUnreachableProxy(): Promise<Running> {
  return startProxy({ upstream: { baseUrl: 'http://127.0.0.1:1', connectTimeoutMs: 500 } });
}
