import type { ClientStackName } from '../clients/stack.js';
import type { Config } from '../config/schema.js';
import { successorBaseOf } from '../deprecation/headers.js';
import { type Example, FOLDED_CLIENT, type LedgerEntry, latestStack } from '../deprecation/ledger.js';
import type { LedgerView } from '../deprecation/ledger-view.js';
import { findOperation, PAGED_PATHS, type PagedPath } from '../operations.js';
import { languageOf, pageUrls, returnsWholeList, type SnippetLanguage, type SnippetRequest, snippetsFor } from './snippets.js';
import { type ClientStatus, clientStatus, type StatusPolicy, statusRank } from './status.js';

/**
 * Each client's migration, from the ledger (the fleet's, or this instance's): its status, its stack,
 * what it calls and the `.cp` request that replaces each, from one of its own calls. Pure: a view and
 * the policy in, the answer out; `GET /clients` and `GET /clients/{client}` (src/server/operator.ts)
 * serve it.
 */

export interface MigrationPolicy extends StatusPolicy {
  /** Where callers reach the `.cp` endpoints (src/deprecation/headers.ts, `successorBaseOf`); '' for a path on the same host. */
  readonly successorBase: string;
  /** The configured clients' cards. */
  readonly cards: ReadonlyMap<string, { readonly team: string | null; readonly contact: string | null; readonly byAddress: boolean }>;
  /** The page parameter of each paged endpoint (`paging.profiles`), which a whole list's snippet steps. */
  readonly pageParams: Readonly<Record<PagedPath, string>>;
}

export function migrationPolicyOf(config: Config): MigrationPolicy {
  return {
    sunsetAt: config.deprecation.sunsetAt,
    quietDays: config.deprecation.quietDays,
    successorBase: successorBaseOf(config),
    cards: new Map(config.clients.map(({ name, team, contact, addresses }) => [name, { team, contact, byAddress: addresses.length > 0 }])),
    pageParams: Object.fromEntries(PAGED_PATHS.map((path) => [path, config.paging.profiles[path].pageParam])) as Record<PagedPath, string>,
  };
}

export interface OperationUse {
  readonly operation: string;
  readonly binding: string;
  readonly calls: number;
  readonly lastSeen: string;
}

export interface ClientSummary extends ClientStatus {
  readonly client: string;
  /** Named in the `clients` table; else `client` is the fingerprint of its key. */
  readonly configured: boolean;
  /** The stack of its latest call that named one (src/clients/stack.ts); null when none did. */
  readonly stack: ClientStackName | null;
  readonly stackVersion: string | null;
  readonly firstSeen: string;
  readonly lastSeen: string;
  readonly calls: number;
  readonly operations: readonly OperationUse[];
}

export interface OperationMigration extends OperationUse {
  /** The `.cp` endpoint that replaces the operation. */
  readonly endpoint: string;
  /**
   * The `.cp` request(s) that replace its latest successful call, with that call's parameters and
   * paging, the key left out; empty when no successful call of it was recorded.
   */
  readonly replacement: readonly string[];
  /** Code that makes that request (every page of it, for a call that returned a whole list), by language; null without one. */
  readonly snippets: Readonly<Record<SnippetLanguage, string>> | null;
}

export interface ClientMigration extends Omit<ClientSummary, 'operations'> {
  /** The language of its stack, whose snippet to send first. */
  readonly language: SnippetLanguage;
  readonly team: string | null;
  readonly contact: string | null;
  readonly operations: readonly OperationMigration[];
}

export interface ClientsAnswer {
  readonly sunsetAt: string | null;
  readonly quietDays: number;
  /** Calls of unnamed callers the ledger could not hold apart (`other`, docs/migration.md §3): in no client. */
  readonly folded: number;
  readonly clients: readonly ClientSummary[];
}

const iso = (ms: number): string => new Date(ms).toISOString();

function summaryOf(client: string, entries: readonly LedgerEntry[], policy: StatusPolicy, now: number): ClientSummary {
  const lastSeen = Math.max(...entries.map((entry) => entry.lastSeen));
  const stack = latestStack(entries);
  return {
    client,
    configured: entries.some((entry) => entry.configured),
    ...clientStatus(lastSeen, now, policy),
    stack: stack?.name ?? null,
    stackVersion: stack?.version ?? null,
    firstSeen: iso(Math.min(...entries.map((entry) => entry.firstSeen))),
    lastSeen: iso(lastSeen),
    calls: entries.reduce((sum, entry) => sum + entry.calls, 0),
    operations: entries.map((entry) => ({
      operation: entry.operation,
      binding: entry.binding,
      calls: entry.calls,
      lastSeen: iso(entry.lastSeen),
    })),
  };
}

/** Every client of the view, worst status first, then most calls. */
export function clientsOf(view: LedgerView, policy: StatusPolicy, now: number): ClientsAnswer {
  const clients = [...view.byClient]
    .filter(([client]) => client !== FOLDED_CLIENT)
    .map(([client, { entries }]) => summaryOf(client, entries, policy, now))
    .sort((a, b) => statusRank(a) - statusRank(b) || b.calls - a.calls || (a.client < b.client ? -1 : a.client > b.client ? 1 : 0));
  return { sunsetAt: policy.sunsetAt, quietDays: policy.quietDays, folded: view.folded, clients };
}

/** One client's migration; null when the view holds no call of it. */
export function clientMigration(view: LedgerView, client: string, policy: MigrationPolicy, now: number): ClientMigration | null {
  const own = client === FOLDED_CLIENT ? undefined : view.byClient.get(client);
  if (own === undefined) return null;
  const summary = summaryOf(client, own.entries, policy, now);
  const card = policy.cards.get(client);
  return {
    ...summary,
    language: languageOf(summary.stack),
    team: card?.team ?? null,
    contact: card?.contact ?? null,
    operations: own.entries.map((entry, index) => {
      const request = entry.example === null ? null : replacementOf(entry.example, entry.operation, policy);
      return {
        ...(summary.operations[index] as OperationUse),
        endpoint: findOperation(entry.operation)?.replacement ?? '',
        replacement: request === null ? [] : pageUrls(request),
        snippets: request === null ? null : snippetsFor(request),
      };
    }),
  };
}

/** The answer to a key no legacy call was seen with: the shape of a client's migration, nothing in it. */
export interface NoCallsSeen extends Omit<ClientMigration, 'firstSeen' | 'lastSeen'> {
  readonly firstSeen: null;
  readonly lastSeen: null;
}

export const NO_CALLS_SEEN = 'No legacy calls seen for this key.';

/** The answer to a key of no call, whoever's: named by its fingerprint, nothing else told. */
export function noCallsSeen(fingerprint: string): NoCallsSeen {
  return {
    client: fingerprint,
    configured: false,
    team: null,
    contact: null,
    status: 'ok',
    fixBy: null,
    urgency: null,
    language: languageOf(null),
    stack: null,
    stackVersion: null,
    firstSeen: null,
    lastSeen: null,
    calls: 0,
    operations: [],
  };
}

/** A client's migration without the requests its calls made: their counts only. */
export function withoutRequests(migration: ClientMigration): ClientMigration {
  return { ...migration, operations: migration.operations.map((use) => ({ ...use, replacement: [], snippets: null })) };
}

/**
 * The request(s) that replace a call of `operation` from its example, at the replacement base, and how
 * their pages make its result. An example of a version that kept no paging is one page, or every page
 * of a list when its operation returned a whole list.
 */
export function replacementOf(example: Example, operation: string, policy: MigrationPolicy): SnippetRequest {
  const url = `${policy.successorBase}${example.successor}`;
  const spec = findOperation(operation);
  const paging = example.paging ?? (spec !== undefined && returnsWholeList(spec) ? { pages: null, skip: 0, take: null } : null);
  const pageParam = spec === undefined ? undefined : policy.pageParams[spec.replacement as PagedPath];
  return { url, paging: paging === null || pageParam === undefined ? null : { ...paging, pageParam } };
}
