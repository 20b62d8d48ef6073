import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { checkProduction, loadConfig } from '../config/load.js';
import { adminUnguarded } from '../config/loopback.js';
import { ConfigError, redactUrl } from '../config/problems.js';
import type { Config } from '../config/schema.js';
import { startDemoUpstream, type DemoUpstream } from '../demo/demo-server.js';
import { tuneHeap } from './heap.js';
import { holdTickObject } from './ticks.js';
import { createHitLogger, createOperatorLogger } from './loggers.js';
import { StartRefused } from './refused.js';
import type { Tracing } from '../tracing/setup.js';
import { TracingSettingsError, tracingSettings } from '../tracing/settings.js';
import { buildApp } from '../server/app.js';
import type { ReloadOutcome } from '../server/reload.js';

/**
 * Entry point: configuration, the upstream (the embedded demo one when none is configured), the
 * HTTP server, and a graceful stop on SIGTERM/SIGINT.
 */

/** The demo upstream wants some appKey, as the real one does; callers without an apiKey get this. */
const DEMO_APP_KEY = 'demo-app-key';
/** The longest a stop waits for the trace collector to take the last spans. */
const TRACES_FLUSH_MS = 5000;

export interface Running {
  /** Where the proxy listens, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  /** Where the operator listener listens (`server.adminPort`); null without one. */
  readonly adminUrl: string | null;
  readonly demo: DemoUpstream | undefined;
  /** Reads the configuration again and applies it to new calls (SIGHUP); refused when it is invalid. */
  reload(): ReloadOutcome;
  stop(): Promise<void>;
}

/**
 * `hitLogger` takes the deprecation hits; `logger` when not given. `source` reads the configuration
 * again for a reload (SIGHUP, `POST /reload`); without it, a reload keeps `config`.
 */
export async function start(
  config: Config,
  logger: Logger,
  hitLogger: Logger = logger,
  source: () => Config = () => config,
  tracing: Tracing | null = null,
): Promise<Running> {
  let demo: DemoUpstream | undefined;
  /** A configuration as it runs: with the demo upstream's address and key when none is configured. */
  let withUpstream = (given: Config): Config => given;
  if (config.upstream.baseUrl === null) {
    const started = await startDemoUpstream(config);
    demo = started;
    withUpstream = (given) =>
      given.upstream.baseUrl !== null
        ? given
        : { ...given, upstream: { ...given.upstream, baseUrl: started.url, appKey: given.upstream.appKey ?? DEMO_APP_KEY } };
    // Every start says so, at warn: a proxy answering real clients from the demo catalog must be seen.
    logger.warn({ event: 'demo_upstream', upstream: demo.url }, `No upstream configured: using the embedded demo upstream at ${demo.url}`);
  } else {
    const upstream = redactUrl(config.upstream.baseUrl);
    logger.info({ event: 'upstream', upstream }, `Upstream: ${upstream}`);
  }
  if (config.deprecation.clientIdKey === null) {
    logger.warn(
      { event: 'client_id_key' },
      'deprecation.clientIdKey is not set: client fingerprints are keyed with a random key of this process, so they change when it ' +
        'restarts and differ between instances. Set CLIENT_ID_KEY (or CLIENT_ID_KEY_FILE), the same on every instance, to keep them.',
    );
  }

  if (adminUnguarded(config.server)) {
    logger.warn(
      { event: 'admin_token_missing', key: 'server.adminToken' },
      `The operator listener leaves loopback (server.adminHost ${config.server.adminHost}) without server.adminToken: ` +
        '/ledger and /reload answer 403 to everyone until ADMIN_TOKEN or ADMIN_TOKEN_FILE is set (refused at start when NODE_ENV ' +
        'is "production").',
    );
  }

  const { fastify, admin, health, reloadFromSource } = await buildApp(withUpstream(config), {
    logger,
    hitLogger,
    configSource: () => withUpstream(source()),
    tracing,
  });
  const { server } = config;
  // From SIGTERM on, every reply closes its connection: a connection kept alive (a load balancer's pool)
  // would otherwise outlive the call in flight when the listener closes, and hold the stop until
  // server.shutdownGraceMs ran out (docs/fleet.md, Drain timing).
  let draining = false;
  for (const app of admin === null ? [fastify] : [fastify, admin]) {
    // With `done`, not async: an async hook costs every call a promise and a turn of the microtask queue.
    app.addHook('onSend', (_request, reply, _payload, done) => {
      if (draining) reply.header('connection', 'close');
      done();
    });
  }
  const stopped = async (): Promise<void> => {
    await fastify.close();
    // The spans of the last calls go out within the grace, or are lost: the stop does not wait on a collector.
    await tracing?.shutdown(Math.min(TRACES_FLUSH_MS, server.shutdownGraceMs));
    await demo?.close();
  };
  let address: string;
  let adminAddress: string | null = null;
  try {
    // The operator listener first: a refusal then comes before any legacy call could be served.
    if (admin !== null && server.adminPort !== null) {
      adminAddress = await listenOn(admin, { host: 'server.adminHost', port: 'server.adminPort' }, server.adminHost, server.adminPort);
    }
    address = await listenOn(fastify, { host: 'server.host', port: 'server.port' }, server.host, server.port);
  } catch (err) {
    await stopped();
    throw err;
  }
  logger.info({ event: 'listening', address }, `Legacy catalog proxy listening on ${address}${server.servicePath}`);
  if (adminAddress !== null) {
    logger.info(
      { event: 'admin_listening', address: adminAddress },
      `Operator endpoints (/metrics, /ledger, /healthz, /readyz) on ${adminAddress}`,
    );
  }
  return {
    url: address,
    adminUrl: adminAddress,
    demo,
    reload: reloadFromSource,
    async stop() {
      // `/readyz` fails first, so that a load balancer stops sending calls before the listener closes.
      draining = true;
      health.startDraining();
      if (server.drainDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, server.drainDelayMs));
      await stopped();
    },
  };
}

/** Why a listener cannot be had, in the operator's words. */
const LISTEN_PROBLEMS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'is in use by another process',
  EACCES: 'may not be listened on by this user (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'names an address this machine does not have',
  ENOTFOUND: 'names a host that does not resolve',
  EAI_AGAIN: 'names a host that does not resolve',
  EINVAL: 'is not one this machine can listen on',
};

/** Problems of the host rather than the port. */
const HOST_PROBLEMS: ReadonlySet<string> = new Set(['EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN', 'EINVAL']);

/** `keys` name the settings of the host and the port, for the refusal to name the one at fault. */
async function listenOn(
  app: FastifyInstance,
  keys: { readonly host: string; readonly port: string },
  host: string,
  port: number,
): Promise<string> {
  try {
    return await app.listen({ host, port });
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    if (code === undefined) throw err;
    const problem = LISTEN_PROBLEMS[code];
    const key = HOST_PROBLEMS.has(code) ? keys.host : keys.port;
    throw new StartRefused(
      key,
      `${host}:${port}`,
      code,
      `cannot be listened on: ${problem === undefined ? message : `the address ${problem}`} (${code}).`,
    );
  }
}

/** Runs the proxy as `npm start` does, until SIGTERM or SIGINT. */
export async function main(): Promise<void> {
  tuneHeap();
  holdTickObject();
  let config: Config;
  try {
    config = loadConfig();
    checkProduction(config);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  const logger = createOperatorLogger(config.log.level);
  let tracing: Tracing | null;
  try {
    const settings = tracingSettings(process.env);
    // Loaded only when on: off, the SDK and its exporters cost not even their loading.
    tracing = settings === null ? null : (await import('../tracing/setup.js')).createTracing(settings, logger);
  } catch (err) {
    if (!(err instanceof TracingSettingsError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  /** Refused before any call: the lines are written as they come, so the refusal is the last. */
  const refuse = (err: StartRefused): void => {
    logger.fatal({ event: 'start_refused', key: err.key, value: err.value, code: err.code }, err.message);
    process.exit(1);
  };
  let hitLogger: Logger;
  try {
    hitLogger = createHitLogger(config.log.hitsFile, logger);
  } catch (err) {
    if (!(err instanceof StartRefused)) throw err;
    return refuse(err);
  }

  // Installed before start-up begins: until a listener exists, SIGTERM kills the process outright.
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      // A second signal: the operator does not want to wait.
      logger.warn({ event: 'stop_forced', signal }, `${signal} again: stopping now`);
      process.exit(1);
      return;
    }
    stopping = true;
    logger.info(
      { event: 'stopping', signal },
      `${signal}: draining for ${config.server.drainDelayMs} ms, finishing requests in flight, then stopping`,
    );
    const deadline = setTimeout(() => {
      logger.warn({ event: 'stop_timeout' }, 'Requests still in flight after the grace period; stopping anyway');
      process.exit(1);
    }, config.server.drainDelayMs + config.server.shutdownGraceMs);
    deadline.unref();
    startup
      .then((running) => running.stop())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ event: 'stop_failed', err }, 'error while stopping');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // SIGHUP reloads the configuration (docs/fleet.md); one that comes while starting waits for the start.
  process.on('SIGHUP', () => {
    startup.then((running) => running.reload()).catch(() => {});
  });
  const startup = start(
    config,
    logger,
    hitLogger,
    () => {
      const next = loadConfig();
      checkProduction(next);
      return next;
    },
    tracing,
  );
  try {
    await startup;
  } catch (err) {
    if (!(err instanceof StartRefused)) throw err;
    refuse(err);
  }
}
