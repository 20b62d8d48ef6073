import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyInstance {
    /** From now on `/readyz` answers 503, so that a load balancer stops sending calls here. */
    startDraining(): void;
    /** What `/readyz` answers. */
    readiness(): Promise<Readiness>;
  }
}

export type Readiness = { readonly ready: true; readonly status: 'ready' } | { readonly ready: false; readonly status: 'draining' | 'upstream unreachable' };

export interface HealthOptions {
  /** Whether the upstream answers at all. */
  readonly upstreamReachable: () => Promise<boolean>;
  /** How long an upstream check is taken as it is, so that probes do not turn into upstream load. */
  readonly cacheMs: number;
}

/**
 * Whether this instance should get calls: configuration loaded (it is, or the process would not have
 * started), the upstream reachable (checked at most once per `cacheMs`), and not draining
 * (docs/wire.md §10.6). The routes are in src/server/operator.ts.
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
    fastify.decorate('readiness', async (): Promise<Readiness> => {
      if (draining) return { ready: false, status: 'draining' };
      return (await reachable()) ? { ready: true, status: 'ready' } : { ready: false, status: 'upstream unreachable' };
    });
  },
  { name: 'health', fastify: '5.x' },
);
