import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyInstance {
    /** From now on `/readyz` answers 503, so that a load balancer stops sending calls here. */
    startDraining(): void;
  }
}

export interface HealthOptions {
  /** Whether the upstream answers at all. */
  readonly upstreamReachable: () => Promise<boolean>;
  /** How long an upstream check is taken as it is, so that probes do not turn into upstream load. */
  readonly cacheMs: number;
}

/**
 * `/healthz`: the process is alive. `/readyz`: it should get calls: configuration loaded (it is, or
 * the process would not have started), the upstream reachable (checked at most once per `cacheMs`),
 * and not draining (docs/wire.md §10.6).
 */
export const healthPlugin = fp<HealthOptions>(
  async (fastify, { upstreamReachable, cacheMs }) => {
    let draining = false;
    let checked: { readonly at: number; readonly reachable: Promise<boolean> } | null = null;
    const reachable = (): Promise<boolean> => {
      if (checked === null || performance.now() - checked.at > cacheMs) checked = { at: performance.now(), reachable: upstreamReachable() };
      return checked.reachable;
    };
    fastify.decorate('startDraining', () => {
      draining = true;
    });
    fastify.get('/healthz', async () => ({ status: 'ok' }));
    fastify.get('/readyz', async (_request, reply) => {
      if (draining) return reply.code(503).send({ status: 'draining' });
      if (!(await reachable())) return reply.code(503).send({ status: 'upstream unreachable' });
      return { status: 'ready' };
    });
  },
  { name: 'health', fastify: '5.x' },
);
