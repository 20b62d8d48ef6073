import { destination, pino, stdTimeFunctions, type Logger } from 'pino';
import { ConfigError, loadConfig, redactUrl, type Config } from './config.js';
import { startDemoUpstream, type DemoUpstream } from './demo/upstream.js';
import { fixHeapGrowth } from './heap.js';
import { buildApp } from './server/app.js';

/**
 * Entry point: configuration, the upstream (the embedded demo one when none is configured), the
 * HTTP server, and a graceful stop on SIGTERM/SIGINT.
 */

/** The demo upstream wants some appKey, as the real one does; callers without an apiKey get this. */
const DEMO_APP_KEY = 'demo-app-key';

export interface Running {
  /** Where the proxy listens, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  readonly demo: DemoUpstream | undefined;
  stop(): Promise<void>;
}

/** `hitLogger` takes the deprecation hits; `logger` when not given. */
export async function start(config: Config, logger: Logger, hitLogger: Logger = logger): Promise<Running> {
  let demo: DemoUpstream | undefined;
  let effective = config;
  if (config.upstream.baseUrl === null) {
    demo = await startDemoUpstream(config);
    effective = { ...config, upstream: { ...config.upstream, baseUrl: demo.url, appKey: config.upstream.appKey ?? DEMO_APP_KEY } };
    // Every start says so, at warn: a proxy answering real clients from the demo catalog must be seen.
    logger.warn({ event: 'demo_upstream', upstream: demo.url }, `No upstream configured: using the embedded demo upstream at ${demo.url}`);
  } else {
    const upstream = redactUrl(config.upstream.baseUrl);
    logger.info({ event: 'upstream', upstream }, `Upstream: ${upstream}`);
  }

  const { fastify, admin } = await buildApp(effective, { logger, hitLogger });
  const address = await fastify.listen({ host: config.server.host, port: config.server.port });
  logger.info({ event: 'listening', address }, `Legacy catalog proxy listening on ${address}${config.server.servicePath}`);
  if (admin && config.server.adminPort !== null) {
    const adminAddress = await admin.listen({ host: config.server.host, port: config.server.adminPort });
    logger.info({ event: 'admin_listening', address: adminAddress }, `Health and metrics on ${adminAddress}`);
  }
  return {
    url: address,
    demo,
    async stop() {
      // `/readyz` fails first, so that a load balancer stops sending calls before the listener closes.
      fastify.startDraining();
      if (config.server.drainDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, config.server.drainDelayMs));
      await fastify.close();
      await demo?.close();
    },
  };
}

/** Every line as Loki, Elasticsearch or Datadog read it without a parser: ISO-8601 time, the level as a word. */
const LINE_FORMAT = { timestamp: stdTimeFunctions.isoTime, formatters: { level: (label: string) => ({ level: label }) } };

/**
 * JSON lines on stdout (or into the file `file`), written in the background so that no call waits
 * for its hit to reach the terminal or the log shipper: lines that pile up while a write is under way
 * go out together.
 */
export function createLogger(level: Config['log']['level'], file: string | null = null): Logger {
  return pino({ level, ...LINE_FORMAT }, destination({ dest: file ?? 1, sync: false, mkdir: true }));
}

/** Runs the proxy as `npm start` does, until SIGTERM or SIGINT. */
export async function main(): Promise<void> {
  fixHeapGrowth();
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  const logger = createLogger(config.log.level);
  // The hits are the migration's record: LOG_LEVEL does not switch them off.
  const hitLogger = createLogger('info', config.log.hitsFile);
  /** Exits once the log lines written so far are out: the destinations write in the background. */
  const exit = (code: number): void => hitLogger.flush(() => logger.flush(() => process.exit(code)));

  // Installed before start-up begins: until a listener exists, SIGTERM kills the process outright.
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      // A second signal: the operator does not want to wait.
      logger.warn({ event: 'stop_forced', signal }, `${signal} again: stopping now`);
      return exit(1);
    }
    stopping = true;
    logger.info({ event: 'stopping', signal }, `${signal}: draining for ${config.server.drainDelayMs} ms, finishing requests in flight, then stopping`);
    const deadline = setTimeout(() => {
      logger.warn({ event: 'stop_timeout' }, 'Requests still in flight after the grace period; stopping anyway');
      exit(1);
    }, config.server.drainDelayMs + config.server.shutdownGraceMs);
    deadline.unref();
    startup
      .then((running) => running.stop())
      .then(
        () => exit(0),
        (err: unknown) => {
          logger.error({ err }, 'error while stopping');
          exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const startup = start(config, logger, hitLogger);
  await startup;
}
