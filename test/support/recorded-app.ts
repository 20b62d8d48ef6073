import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.js';
import type { Json } from '../../src/config/validate.js';
import { buildApp, type AppDependencies } from '../../src/server/app.js';
import { recordingUpstream } from './pages.js';
import type { StubUpstream } from './stub-upstream.js';

/** The app on loopback over a recording upstream, with every log line it writes (the hits among them). */
export interface RecordedApp {
  readonly base: string;
  /** The operator listener: /metrics, /ledger. */
  readonly admin: string;
  readonly upstream: StubUpstream;
  /** Every line logged, parsed; a test may empty it. */
  readonly lines: Record<string, unknown>[];
  close(): Promise<void>;
}

/** `overrides` are merged over the defaults, the upstream and an `info` log level. */
export async function startRecordedApp(overrides: Json, deps: Pick<AppDependencies, 'now'> = {}): Promise<RecordedApp> {
  const upstream = await recordingUpstream(100);
  const config = loadConfig({ UPSTREAM_URL: upstream.origin }, { log: { level: 'info' }, server: { adminPort: 0 } }, overrides);
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const app = await buildApp(config, { ...deps, logger });
  const base = await app.fastify.listen({ host: '127.0.0.1', port: 0 });
  const admin = await app.admin!.listen({ host: '127.0.0.1', port: 0 });
  return {
    base,
    admin,
    upstream,
    lines,
    async close() {
      await app.fastify.close();
      await upstream.close();
    },
  };
}
