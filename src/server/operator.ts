import type { Registry } from 'prom-client';
import { createExposition } from '../metrics/exposition.js';
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { OPERATOR_DATA_PATHS } from '../config/schema.js';
import type { HitRecorder } from '../deprecation/hits.js';
import type { FleetLedger } from '../deprecation/fleet-ledger.js';
import { ledgerText } from '../deprecation/ledger-page.js';
import type { UpstreamHealth, UpstreamHealthState } from '../outbound/upstream-health.js';
import type { Health } from './health.js';

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
  readonly hits: HitRecorder;
  readonly registry: Registry;
  /** The fleet's ledger (`redis.url`); null: `/ledger` shows this instance's. */
  readonly fleetLedger: FleetLedger | null;
  readonly paths: readonly OperatorDataPath[];
  /** Who may read `/ledger` here (src/server/operator-token.ts). */
  readonly guard: onRequestHookHandler;
}

export async function operatorDataRoutes(
  fastify: FastifyInstance,
  { hits, registry, fleetLedger, paths, guard }: OperatorDataOptions,
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
      // The fleet's when Redis answers; this instance's own when it does not, and the reply says which.
      const fleet = fleetLedger === null ? null : await fleetLedger.view();
      const { status, text } = ledgerText(fleet ?? hits.ledgerView(), fleet === null ? 'instance' : 'fleet', request.query);
      return reply.code(status).type('application/json; charset=utf-8').send(text);
    });
  }
}

function upstreamJson(state: UpstreamHealthState): Record<string, unknown> {
  const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
  return { up: state.up, checkedAt: iso(state.checkedAt), source: state.source, problem: state.problem, lastUpAt: iso(state.lastUpAt) };
}
