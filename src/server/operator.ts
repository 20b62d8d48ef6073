import type { FastifyInstance } from 'fastify';
import type { HitRecorder } from '../deprecation/hits.js';
import { ledgerPage } from '../migration/ledger.js';
import type { Readiness } from './health.js';

export interface OperatorOptions {
  readonly hits: HitRecorder;
  readonly readiness: () => Promise<Readiness>;
}

/**
 * What the operator's tools ask: `/healthz` (alive), `/readyz` (should get calls), `/metrics`
 * (Prometheus) and `/ledger` (who still calls what here, docs/migration.md). On the service's own
 * port, or on `server.adminPort` when one is set, so that they need not be reachable from where the
 * legacy clients are.
 */
export async function operatorRoutes(fastify: FastifyInstance, { hits, readiness }: OperatorOptions): Promise<void> {
  fastify.get('/healthz', async () => ({ status: 'ok' }));
  fastify.get('/readyz', async (_request, reply) => {
    const { ready, status } = await readiness();
    return reply.code(ready ? 200 : 503).send({ status });
  });
  fastify.get('/metrics', async (_request, reply) => {
    reply.header('content-type', hits.registry.contentType);
    return hits.registry.metrics();
  });
  fastify.get('/ledger', async (request, reply) => {
    const { status, body } = ledgerPage(hits.ledger, request.query);
    return reply.code(status).send(body);
  });
}
