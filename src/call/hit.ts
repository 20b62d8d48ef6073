import type { FetchTrace, PageSource } from '../outbound/fetch.js';
import type { Caller } from '../clients/directory.js';
import type { ClientStack } from '../clients/stack.js';
import type { RouteName } from '../config/schema.js';
import type { DeprecationHit } from '../deprecation/hits.js';
import { CallRefused, failureReason, UpstreamBusy } from '../errors.js';
import type { Read } from '../inbound/binding.js';
import { redactCallerText } from '../redaction/caller-text.js';
import type { Ending } from '../inbound/ending.js';
import { credentialsRead } from './read.js';

/** What the hit of one call is made of. */
export interface CallRecord {
  readonly requestId: string;
  readonly read: Read<unknown> | null;
  readonly caller: Caller;
  readonly ending: Ending;
  readonly route: RouteName;
  /** Turned away past `server.maxConcurrentCalls`. */
  readonly shed: boolean;
  readonly durationMs: number;
  readonly upstreamRequests: number;
  /** How the call's pages were served (src/cache/page-cache.ts). */
  readonly pages: Readonly<Record<PageSource, number>>;
  readonly remoteAddress: string | null;
  readonly userAgent: string | null;
  /** The stack that made the call (src/clients/stack.ts). */
  readonly stack: ClientStack;
  /** The call's span, while tracing is on. */
  readonly trace: FetchTrace | null;
}

function outcomeOf({ shed, ending: { failure } }: CallRecord): DeprecationHit['outcome'] {
  if (shed || failure instanceof UpstreamBusy) return 'shed';
  if (failure === null) return 'ok';
  return failure instanceof CallRefused ? 'refused' : 'fault';
}

/** The deprecation hit of a call: the same fields whatever its binding and outcome. */
export function hitOf(record: CallRecord): DeprecationHit {
  const { read, caller, ending } = record;
  const { failure } = ending;
  const reason = failure === null ? null : failureReason(failure);
  const operation = read === null ? null : read.ok ? read.call.operation : read.operation;
  const { apiKey, version } = credentialsRead(read);
  return {
    requestId: record.requestId,
    operation: operation?.name ?? 'unknown',
    binding: read?.binding ?? 'unknown',
    client: caller.name,
    clientLabel: caller.label,
    clientFingerprint: caller.fingerprint,
    team: caller.team,
    contact: caller.contact,
    legacyVersion: redactCallerText(version, apiKey),
    replacement: operation?.replacement ?? '',
    successor: ending.successor,
    successorPaging: ending.successorPaging ?? null,
    route: record.route,
    outcome: outcomeOf(record),
    reason,
    status: ending.reply.status,
    durationMs: Math.round(record.durationMs * 1000) / 1000,
    upstreamRequests: record.upstreamRequests,
    pages: { ...record.pages },
    remoteAddress: redactCallerText(record.remoteAddress, apiKey),
    userAgent: redactCallerText(record.userAgent, apiKey),
    clientStack: record.stack.name,
    // Read from the User-Agent as it came: a version that holds the key (`PHP-SOAP/8.2+<key>`) is not kept.
    clientStackVersion: redactCallerText(record.stack.version, apiKey) === record.stack.version ? record.stack.version : null,
    ...(record.trace === null ? {} : { traceId: record.trace.traceId, spanId: record.trace.spanId }),
  };
}

/** The trace and span ids of a hit, for the lines logged about its call. */
export function traceIds(hit: DeprecationHit): { traceId?: string; spanId?: string } {
  return hit.traceId === undefined ? {} : { traceId: hit.traceId, spanId: hit.spanId };
}
