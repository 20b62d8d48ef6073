import type { UpstreamHealth } from '../outbound/upstream-health.js';

export type Readiness =
  | { readonly ready: true; readonly status: 'ready' }
  | { readonly ready: false; readonly status: 'starting' | 'draining' | 'upstream unreachable' };

export interface Health {
  /** What `/readyz` answers. */
  readiness(): Promise<Readiness>;
  /** A listener the instance needs is up; ready once all of them are. */
  listening(name: string): void;
  /** From now on `/readyz` answers 503, so that a load balancer stops sending calls here. */
  startDraining(): void;
}

/**
 * Whether this instance should get calls (docs/wire.md §10.6): not while it starts (until every
 * listener it was given is up; the configuration, the upstream client and the WebAssembly pass are
 * ready before any listens) and not while it drains. The upstream's reachability is the operators'
 * to see (src/outbound/upstream-health.ts), not a reason to be unready: it is the same for every
 * instance, and a load balancer would take the whole fleet out at once. `followUpstream`
 * (`server.readinessFollowsUpstream`) asks for that anyway, for a deployment that fails over to
 * another site.
 */
export function createHealth(listeners: readonly string[], upstream: UpstreamHealth, followUpstream: boolean): Health {
  const waitingFor = new Set(listeners);
  let draining = false;
  return {
    async readiness() {
      if (draining) return { ready: false, status: 'draining' };
      if (waitingFor.size > 0) return { ready: false, status: 'starting' };
      if (followUpstream && !(await upstream.check())) return { ready: false, status: 'upstream unreachable' };
      return { ready: true, status: 'ready' };
    },
    listening(name) {
      waitingFor.delete(name);
    },
    startDraining() {
      draining = true;
    },
  };
}
