import { stackOfRecord } from '../clients/stack.js';
import { BINDING_NAMES } from '../inbound/binding.js';
import { findOperation } from '../operations.js';
import { MAX_SUCCESSOR_LENGTH } from '../translate/plan.js';
import { OUTCOMES, type LedgerHit, type Outcome } from '../deprecation/ledger.js';
import { pagingOfRecord } from '../deprecation/ledger-record.js';

/**
 * One line of a hit log, read. The hits share their file with other lines (operator warnings, start-up
 * lines), and schema 1 lines lack what schema 2 added (`clientLabel`, `clientFingerprint`, `team`,
 * `contact`, `successor`): both are read, and a line that is neither JSON nor a complete hit is named, not fatal.
 */

export interface LoggedHit extends LedgerHit {
  /** Epoch milliseconds. */
  readonly time: number;
  /** Schema 2: a configured client's name, else `other`; null in schema 1. */
  readonly clientLabel: string | null;
  /** Schema 2: the fingerprint behind a configured client's name; null in schema 1, where `client` is it. */
  readonly clientFingerprint: string | null;
  readonly team: string | null;
  readonly contact: string | null;
}

export type ReadLine =
  | { readonly kind: 'hit'; readonly hit: LoggedHit }
  | { readonly kind: 'other' }
  | { readonly kind: 'malformed'; readonly reason: string };

const OTHER: ReadLine = { kind: 'other' };

/** Every hit line holds this text: lines without it are not parsed at all (most of the cost of a log). */
const HIT_MARK = '"deprecated_call"';

export function readHitLine(line: string): ReadLine {
  if (!line.includes(HIT_MARK)) return line.trim() === '' || line.trimStart().startsWith('{') ? OTHER : malformed('not JSON');
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return malformed('not JSON');
  }
  if (typeof json !== 'object' || json === null || (json as Record<string, unknown>).event !== 'deprecated_call') return OTHER;
  const fields = json as Record<string, unknown>;
  const time = timeOf(fields.time);
  if (time === null) return malformed('a hit without a valid time');
  for (const name of ['client', 'operation', 'binding'] as const) {
    if (typeof fields[name] !== 'string' || fields[name] === '') return malformed(`a hit without ${name}`);
  }
  if (!(OUTCOMES as readonly unknown[]).includes(fields.outcome)) return malformed(`a hit with outcome ${JSON.stringify(fields.outcome)}`);
  // The ledger's cap counts entries, not bytes: a forged name of a megabyte per line would make a few
  // thousand lines hold gigabytes. Names are at most 64 characters (a client's, a fingerprint).
  for (const name of ['client', 'clientLabel', 'clientFingerprint'] as const) {
    const value = fields[name];
    if (typeof value === 'string' && value.length > MAX_NAME_LENGTH)
      return malformed(`a hit whose ${name} is longer than ${MAX_NAME_LENGTH} characters`);
  }
  // Operations and bindings are the service's, few and fixed: the ledger, the charts and the memory of
  // the report grow with them, so a line naming another (a forged or corrupt line) is not counted.
  const { operation, binding } = fields as Record<'operation' | 'binding', string>;
  if (operation !== 'unknown' && findOperation(operation) === undefined)
    return malformed(`a hit with operation ${JSON.stringify(operation)}`);
  if (binding !== 'unknown' && !(BINDING_NAMES as readonly string[]).includes(binding))
    return malformed(`a hit with binding ${JSON.stringify(binding)}`);
  const successor = textOrNull(fields.successor);
  // A stack the proxy would not have written (a line of an older version has none) is no stack, not a malformed line.
  const stack = stackOfRecord(fields.clientStack, fields.clientStackVersion ?? null);
  return {
    kind: 'hit',
    hit: {
      time,
      client: fields.client as string,
      clientLabel: textOrNull(fields.clientLabel),
      operation: fields.operation as string,
      binding: fields.binding as string,
      outcome: fields.outcome as Outcome,
      successor: successor !== null && successor.length > MAX_SUCCESSOR_LENGTH ? null : successor,
      // As a ledger record's: one the proxy would not write is none, and the hit still counts.
      successorPaging: pagingOfRecord(fields.successorPaging) ?? null,
      clientFingerprint: textOrNull(fields.clientFingerprint),
      team: cut(textOrNull(fields.team), MAX_CARD_LENGTH),
      contact: cut(textOrNull(fields.contact), MAX_CARD_LENGTH),
      ...(stack === null ? {} : { clientStack: stack.name, clientStackVersion: stack.version }),
    },
  };
}

const malformed = (reason: string): ReadLine => ({ kind: 'malformed', reason });

/** A client's name or a fingerprint (schema: `clients[].name`, `hmac:` + 12 hex digits). */
const MAX_NAME_LENGTH = 64;
/** The proxy leaves out a successor longer than this (docs/migration.md §2): a longer one is forged. */
/** A team or contact is shown, not counted: cut, like the proxy cuts caller-written text. */
const MAX_CARD_LENGTH = 256;

const textOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);

const cut = (text: string | null, maxLength: number): string | null =>
  text === null || text.length <= maxLength ? text : `${text.slice(0, maxLength)}…`;

/**
 * The times a hit of this service can carry: no ASMX service ran before 2000, and this one is not
 * expected past 2100. A time outside (epoch 0 from a broken clock, a forged line) would stretch the
 * report over every day in between, one count per day per series, and beyond JavaScript's dates
 * (±8.64e15 ms) would not be a date at all.
 */
const EARLIEST_HIT = Date.UTC(2000, 0, 1);
const LATEST_HIT = Date.UTC(2100, 0, 1);

/** pino writes ISO 8601 here (src/main.ts); its default, and older files, epoch milliseconds. */
function timeOf(value: unknown): number | null {
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : NaN;
  return ms >= EARLIEST_HIT && ms < LATEST_HIT ? ms : null;
}
