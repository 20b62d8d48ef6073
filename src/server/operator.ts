import type { Registry } from 'prom-client';
import { createExposition } from '../metrics/exposition.js';
import type { FastifyInstance, FastifyReply, onRequestHookHandler } from 'fastify';
import { HTML_CONTENT_TYPE, htmlEncode } from '../aspnet/error-page.js';
import type { OPERATOR_DATA_PATHS } from '../config/schema.js';
import { ledgerText } from '../deprecation/ledger-page.js';
import { clientPage, clientsPage } from '../migration/client-page.js';
import { clientMigration, clientsOf, type MigrationPolicy } from '../migration/clients.js';
import type { UpstreamHealth, UpstreamHealthState } from '../outbound/upstream-health.js';
import type { Health } from './health.js';
import type { LedgerSource } from './ledger-source.js';
import { JSON_CONTENT_TYPE, wantsHtml } from './negotiation.js';

/**
 * What the operator's tools ask. `/healthz` (alive) and `/readyz` (should get calls) are on every
 * listener: load balancers probe the service's port. `/metrics` (Prometheus) and `/ledger` (who still
 * calls what here, docs/migration.md) name clients and show their fingerprints and latest requests,
 * which are not for legacy callers: they are on the operator listener (`server.adminPort`), and on the
 * service's port only where `server.operatorOnServicePort` names them. `/ledger` also asks the
 * operator's guard (src/server/operator-token.ts) on either; `/metrics` stays open for scrapers.
 */

export type OperatorDataPath = (typeof OPERATOR_DATA_PATHS)[number];

export interface ProbeOptions {
  readonly health: Health;
  /** On the operator listener, `/healthz` also says how the upstream is (it is the same for every instance). */
  readonly upstream: UpstreamHealth | null;
}

export async function probeRoutes(fastify: FastifyInstance, { health, upstream }: ProbeOptions): Promise<void> {
  fastify.get('/healthz', async () => (upstream === null ? { status: 'ok' } : { status: 'ok', upstream: upstreamJson(upstream.state()) }));
  fastify.get('/readyz', async (_request, reply) => {
    const { ready, status } = await health.readiness();
    return reply.code(ready ? 200 : 503).send({ status });
  });
}

export interface OperatorDataOptions {
  readonly registry: Registry;
  /** The fleet's ledger when Redis answers, else this instance's. */
  readonly ledger: LedgerSource;
  readonly paths: readonly OperatorDataPath[];
  /** Who may read `/ledger` and `/clients` here (src/server/operator-token.ts). */
  readonly guard: onRequestHookHandler;
  /** How `/clients` judges and shows a client's migration, from the configuration in force. */
  readonly migration: () => MigrationPolicy;
  readonly now: () => number;
}

export async function operatorDataRoutes(
  fastify: FastifyInstance,
  { registry, ledger: readLedger, paths, guard, migration, now }: OperatorDataOptions,
): Promise<void> {
  if (paths.includes('/metrics')) {
    const expose = createExposition(registry);
    fastify.get('/metrics', async (request, reply) => {
      const { contentType, text } = await expose(request.headers.accept);
      reply.header('content-type', contentType);
      return text;
    });
  }
  if (paths.includes('/ledger')) {
    fastify.get('/ledger', { onRequest: guard }, async (request, reply) => {
      const { view, scope } = await readLedger();
      const { status, text } = ledgerText(view, scope, request.query);
      return reply.code(status).type(JSON_CONTENT_TYPE).send(text);
    });
  }
  if (paths.includes('/clients')) {
    const listed = async (reply: FastifyReply, html: boolean) => {
      reply.header('vary', 'Accept');
      const { view, scope } = await readLedger();
      const answer = clientsOf(view, migration(), now());
      return html
        ? reply.type(HTML_CONTENT_TYPE).send(clientsPage(answer))
        : reply.type(JSON_CONTENT_TYPE).send({ version: 1, scope, ...answer });
    };
    fastify.get('/clients', { onRequest: guard }, (request, reply) => listed(reply, wantsHtml(request)));
    fastify.get('/clients.html', { onRequest: guard }, (_request, reply) => listed(reply, true));
    fastify.get<{ Params: { client: string } }>('/clients/:client', { onRequest: guard }, async (request, reply) => {
      const { view, scope } = await readLedger();
      const policy = migration();
      const asked = request.params.client;
      // `NAME.html` is NAME's page, unless a client is named so (a configured name may hold dots).
      const page = asked.endsWith('.html') && !view.byClient.has(asked);
      const client = page ? asked.slice(0, -'.html'.length) : asked;
      const html = page || wantsHtml(request);
      const migrated = clientMigration(view, client, policy, now());
      reply.header('vary', 'Accept');
      if (migrated === null) {
        const message = `No legacy call of ${JSON.stringify(client)} is in the ledger (scope: ${scope}).`;
        return html
          ? reply.code(404).type(HTML_CONTENT_TYPE).send(clientsNotFoundPage(message))
          : reply.code(404).type(JSON_CONTENT_TYPE).send({ statusCode: 404, error: 'Not Found', message });
      }
      return html
        ? reply.type(HTML_CONTENT_TYPE).send(clientPage(migrated))
        : reply.type(JSON_CONTENT_TYPE).send({ version: 1, scope, ...migrated });
    });
  }
}

function clientsNotFoundPage(message: string): string {
  return (
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Not found</title></head>' +
    `<body><p>${htmlEncode(message)}</p></body></html>`
  );
}

function upstreamJson(state: UpstreamHealthState): Record<string, unknown> {
  const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
  return { up: state.up, checkedAt: iso(state.checkedAt), source: state.source, problem: state.problem, lastUpAt: iso(state.lastUpAt) };
}
