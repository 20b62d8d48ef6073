import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { levels, symbols } from 'pino';
import type { PageSource } from '../outbound/fetch.js';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { ClientStackName } from '../clients/stack.js';
import type { FailureReason } from '../errors.js';
import type { SuccessorPaging } from '../translate/plan.js';
import type { BindingName } from '../inbound/binding.js';
import { Ledger, type LedgerHit } from './ledger.js';
import { cachedView, type LedgerView } from './ledger-view.js';
import type { RouteName } from '../config/schema.js';
import type { OperationName, UpstreamPath } from '../operations.js';
import type { UpstreamObservation } from '../outbound/upstream-client.js';

/**
 * Every legacy call is a deprecation hit: one structured log event with a stable schema for the ops
 * dashboards, and Prometheus metrics. Keys never appear here: callers are named by a fingerprint.
 */

export interface DeprecationHit {
  /** The id of the request, shared with the lines about its upstream requests. */
  readonly requestId: string;
  /** `unknown` when the request never named an operation that exists. */
  readonly operation: OperationName | 'unknown';
  /** `unknown` only when a binding failed to read the request at all (a defect). */
  readonly binding: BindingName | 'unknown';
  /** The name of a client of the `clients` table; for everyone else their fingerprint. */
  readonly client: string;
  /** The `client` label of the metrics: a configured client's name, else `other`. */
  readonly clientLabel: string;
  /** `hmac:` + 12 hex digits of the apiKey's HMAC, or `anonymous` (schema 1 hits may carry `sha256:`). */
  readonly clientFingerprint: string;
  readonly team: string | null;
  readonly contact: string | null;
  readonly legacyVersion: string | null;
  /** The replacement endpoint; empty when no operation was named. */
  readonly replacement: UpstreamPath | '';
  /** The `.cp` request that replaces this call, appKey left out; null when the call was not translated. */
  readonly successor: string | null;
  /** How the pages from `successor` on make the call's result (`successorPagingOf`); null for one page. */
  readonly successorPaging: SuccessorPaging | null;
  /**
   * The path that answered: the translation, the legacy origin as it is, or one of them with the other shadowing (docs/migration.md §6).
   */
  readonly route: RouteName;
  /**
   * `shed`: refused with 503 because `server.maxConcurrentCalls` were in flight (`reason` null) or the
   * upstream budget had no room (`reason` `budget`); `refused`: in a
   * brownout or after sunset (`reason` says which), with the fault that names the replacement.
   */
  readonly outcome: 'ok' | 'fault' | 'shed' | 'refused';
  readonly reason: FailureReason | null;
  readonly status: number;
  readonly durationMs: number;
  /** Requests this call made to the upstream itself (a background refresh is not the call's). */
  readonly upstreamRequests: number;
  /**
   * How the call's pages were served, a count for each way: `hit`, `miss`, `stale`, `revalidated`,
   * `coalesced` (src/cache/page-cache.ts). Without the cache, every page is a `miss`.
   */
  readonly pages: Readonly<Record<PageSource, number>>;
  readonly remoteAddress: string | null;
  readonly userAgent: string | null;
  /** The stack that made the call, from its User-Agent and the shape of its request (src/clients/stack.ts). */
  readonly clientStack: ClientStackName;
  /** That stack's version, where the request says one. */
  readonly clientStackVersion: string | null;
  /** The call's trace and its server span, while tracing is on (docs/operating.md, "Traces"); absent otherwise. */
  readonly traceId?: string;
  readonly spanId?: string;
}

/** The exemplar of a call's duration: its trace, when it has one (prom-client types its labels as the metric's own). */
function exemplarOf(hit: DeprecationHit): Record<string, string> {
  return hit.traceId === undefined || hit.spanId === undefined ? {} : { trace_id: hit.traceId, span_id: hit.spanId };
}

/** Bump when a field of DeprecationHit changes meaning or goes away; dashboards key on it. */
export const HIT_SCHEMA_VERSION = 2;

/**
 * Caller-supplied text in a log line is cut here: a 1 MB `version=` must not make a 1 MB line, nor an
 * X-Forwarded-For that a trusted proxy passed on as it came.
 */
const MAX_LOGGED_TEXT = 256;

/** A surrogate without its pair: JSON.stringify writes it as an escape that strict JSON readers refuse. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Caller text as logged: cut, and a lone surrogate (a `%uD800` in it, or half a pair the cut left) as U+FFFD. */
function loggable(text: string | null): string | null {
  if (text === null) return null;
  const cut = text.length <= MAX_LOGGED_TEXT ? text : `${text.slice(0, MAX_LOGGED_TEXT)}…`;
  // Text all in ASCII, as callers' mostly is, holds no surrogate: no regular expression run over it.
  return needsEscaping(cut) ? cut.replace(LONE_SURROGATE, '\uFFFD') : cut;
}

/**
 * What the hit lines are written to: a pino destination (src/log/line-stream.ts, or a test's stream).
 * When it can gather lines (`LineStream.gather`), the hit lines are gathered: written together at the
 * end of the turn, before the turn's replies.
 */
interface LineDestination {
  write(line: string): unknown;
  gather?(line: string): void;
}

/** How the hits are written: to their logger's own destination, past pino's serializer (see `hitLine`). */
function hitWriterOf(logger: FastifyBaseLogger): ((line: string) => unknown) | null {
  // A logger set above info (a test's silent one) writes no hits, as `logger.info` would not. Its level
  // is set at start: `log` is a restart-only setting (src/config/reload.ts).
  if ((levels.values[logger.level] ?? Number.POSITIVE_INFINITY) > (levels.values.info as number)) return null;
  const destination = (logger as unknown as Record<symbol, LineDestination | undefined>)[symbols.streamSym];
  if (destination === undefined) return null;
  return destination.gather ? destination.gather.bind(destination) : destination.write.bind(destination);
}

/** What pino's base adds to every line (src/start/main.ts writes the operators' lines so too). */
const PID = process.pid;
const HOSTNAME = hostname();

/**
 * The hit as its JSON line: the fields and their order as pino wrote them (level and time as the
 * proxy's loggers write them, pid and hostname, then the hit, then `msg`), so that the dashboards
 * and `npm run report` read the same line. Written field by field: pino's generic serializer cost
 * about 20 µs of a call under load on Node 24 (docs/performance.md), and one JSON.stringify of an
 * object of the line's shape a third more than this. Text that can come from outside the code (the
 * caller's, the configuration's, a request id) goes through `text`; the names of a closed set listed
 * in the code (operation, binding, outcome, replacement, stack) and whole numbers are written as they
 * are: none needs an escape (a test holds every one of them to that), and checking twenty texts cost
 * a third of the line.
 */
export function hitLine(hit: DeprecationHit, at: number): string {
  const spanned = hit.spanId === undefined ? '' : `,"spanId":${text(hit.spanId)}`;
  const traced = hit.traceId === undefined ? '' : `,"traceId":${text(hit.traceId)}${spanned}`;
  const { operation, binding, pages } = hit;
  return (
    `${LINE_START}${isoTime(at)}${LINE_PROCESS}${text(hit.requestId)},"operation":"${operation}","binding":"${binding}"` +
    `,"client":${text(hit.client)},"clientLabel":${text(hit.clientLabel)},"clientFingerprint":${text(hit.clientFingerprint)}` +
    `,"team":${text(hit.team)},"contact":${text(hit.contact)},"legacyVersion":${text(loggable(hit.legacyVersion))}` +
    `,"replacement":"${hit.replacement}","successor":${text(hit.successor)}` +
    `,"successorPaging":${JSON.stringify(hit.successorPaging)},"route":${text(hit.route)},"outcome":"${hit.outcome}"` +
    `,"reason":${text(hit.reason)},"status":${hit.status},"durationMs":${number(hit.durationMs)}` +
    `,"upstreamRequests":${hit.upstreamRequests},"pages":{"hit":${pages.hit},"miss":${pages.miss},"stale":${pages.stale}` +
    `,"revalidated":${pages.revalidated},"coalesced":${pages.coalesced}}` +
    `,"remoteAddress":${text(loggable(hit.remoteAddress))},"userAgent":${text(loggable(hit.userAgent))}` +
    `,"clientStack":"${hit.clientStack}","clientStackVersion":${text(hit.clientStackVersion)}${traced}` +
    `,"msg":"deprecated call ${operation} (${binding})"}\n`
  );
}

const LINE_START = '{"level":"info","time":"';
const LINE_PROCESS =
  `","pid":${PID},"hostname":${JSON.stringify(HOSTNAME)},"event":"deprecated_call",` + `"schema":${HIT_SCHEMA_VERSION},"requestId":`;

/** Text as JSON.stringify writes it: quoted as it is when it holds nothing JSON escapes (nor any character past ASCII). */
function text(value: string | null): string {
  if (value === null) return 'null';
  return needsEscaping(value) ? JSON.stringify(value) : `"${value}"`;
}

/**
 * Whether `value` holds a quote, a backslash, a control character or any character past ASCII. A loop,
 * not a regular expression: the line's twenty short texts each paid a call into the regexp engine,
 * about a microsecond a hit on Node 20.
 */
function needsEscaping(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x22 || code === 0x5c || code >= 0x7f) return true;
  }
  return false;
}

/** As JSON.stringify writes a number: one that is not finite (which none of the line's is) as null. */
function number(value: number): string {
  return Number.isFinite(value) ? String(value) : 'null';
}

/** The last time written, as written: calls that end within the same millisecond share it (under load, several do). */
let lastTime = Number.NaN;
let lastIsoTime = '';

function isoTime(at: number): string {
  if (at !== lastTime) {
    lastIsoTime = new Date(at).toISOString();
    lastTime = at;
  }
  return lastIsoTime;
}

export interface HitRecorder {
  /** Who called what on this instance since it started (`GET /ledger`). */
  readonly ledger: Ledger;
  /** That ledger sorted for `GET /ledger`, at most a second old. */
  ledgerView(): LedgerView;
  record(hit: DeprecationHit): void;
  observeUpstream(seen: UpstreamObservation): void;
  /** Writes what is still pending (the last interval's count of shed calls). */
  close(): void;
}

/** How old the instance ledger's view may be: sorting ten thousand entries for every read of a poller costs calls. */
const LEDGER_VIEW_MAX_AGE_MS = 1000;

/** Shed calls are summed up in one warning per interval: under overload, a line each would add to it. */
const SHED_WARNING_INTERVAL_MS = 10_000;

/** From a cached page (5 ms) to a call that hits its deadline (the default callTimeoutMs is 30 s). */
const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Where hits are counted besides the instance's own ledger: the fleet's (src/deprecation/fleet-ledger.ts). */
export interface LedgerSink {
  add(hit: LedgerHit, at: number): void;
}

/**
 * `log` takes the operators' lines (upstream failures, shed summaries); `hitLog` the hits, a channel
 * of their own that the operators' log level does not switch off.
 */
export function createHitRecorder(
  registry: Registry,
  log: FastifyBaseLogger,
  hitLog: FastifyBaseLogger = log,
  fleet: LedgerSink | null = null,
  /** While tracing is on: each call's duration carries its trace as an exemplar (OpenMetrics only). */
  exemplars = false,
): HitRecorder {
  const calls = new Counter({
    name: 'legacy_calls_total',
    help:
      'Calls of deprecated legacy operations, by operation, binding, outcome and client (configured clients by name, everyone else ' +
      'as other).',
    labelNames: ['operation', 'binding', 'outcome', 'client'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'legacy_call_duration_seconds',
    help: 'Time to answer a legacy call, upstream requests included.',
    labelNames: ['operation', 'binding'] as const,
    buckets: SECONDS_BUCKETS,
    registers: [registry],
    enableExemplars: exemplars,
  });
  const upstream = new Histogram({
    name: 'upstream_request_duration_seconds',
    help: 'Requests to the .cp upstream, by endpoint and outcome.',
    labelNames: ['path', 'outcome'] as const,
    buckets: SECONDS_BUCKETS,
    registers: [registry],
  });
  const shedCalls = new Counter({
    name: 'legacy_calls_shed_total',
    help: 'Legacy calls refused with 503 because server.maxConcurrentCalls were in flight.',
    registers: [registry],
  });

  let shedInInterval = 0;
  let shedTimer: NodeJS.Timeout | null = null;
  const warnShed = (): void => {
    if (shedTimer !== null) clearTimeout(shedTimer);
    shedTimer = null;
    if (shedInInterval === 0) return;
    log.warn(
      { event: 'calls_shed', shed: shedInInterval, intervalMs: SHED_WARNING_INTERVAL_MS },
      `${shedInInterval} legacy calls answered 503 Server Too Busy: server.maxConcurrentCalls were in flight`,
    );
    shedInInterval = 0;
  };

  const ledger = new Ledger();
  const writeHit = hitWriterOf(hitLog);

  return {
    ledger,
    ledgerView: cachedView(ledger, LEDGER_VIEW_MAX_AGE_MS),
    record(hit) {
      const at = Date.now();
      ledger.add(hit, at);
      fleet?.add(hit, at);
      calls.inc({ operation: hit.operation, binding: hit.binding, outcome: hit.outcome, client: hit.clientLabel });
      if (hit.outcome === 'shed') {
        shedCalls.inc();
        shedInInterval++;
        shedTimer ??= setTimeout(warnShed, SHED_WARNING_INTERVAL_MS).unref();
      } else {
        const labels = { operation: hit.operation, binding: hit.binding };
        const value = hit.durationMs / 1000;
        // With exemplars on, prom-client's observe takes only the object form.
        if (exemplars) duration.observe({ labels, value, exemplarLabels: exemplarOf(hit) as unknown as typeof labels });
        else duration.observe(labels, value);
      }
      writeHit?.(hitLine(hit, at));
    },
    close: warnShed,
    observeUpstream(seen) {
      upstream.observe({ path: seen.path, outcome: seen.outcome }, seen.durationMs / 1000);
      // The fault a legacy client sees says "Unable to connect"; operators need the cause behind it.
      if (seen.outcome === 'ok' || seen.outcome === 'cancelled') return;
      const fields = { event: 'upstream_failure', ...seen };
      const message = `upstream ${seen.path}: ${seen.outcome}`;
      // A caller's own mistake answered by the upstream (a store not found, a key refused) is a normal
      // day's: said at info, so that a warning means the upstream or the network.
      if (answeredCallerError(seen)) log.info(fields, message);
      else log.warn(fields, message);
    },
  };
}

/** A 4xx the upstream answered with one of its error documents: about the request, not the upstream's health. */
function answeredCallerError({ outcome, code, status }: UpstreamObservation): boolean {
  return outcome === 'upstream_status' && code === 'error_document' && status !== null && status < 500;
}
