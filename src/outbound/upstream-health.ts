import { Gauge, type Registry } from 'prom-client';
import type { UpstreamObservation } from './upstream-client.js';

/**
 * Whether the upstream answers, for the operators (`upstream_up`, the operator listener's `/healthz`,
 * the UpstreamDown alert), not for readiness: every instance shares the upstream, so a readiness that
 * followed it would take the whole fleet out of its load balancer at once (unless asked for,
 * `server.readinessFollowsUpstream`).
 *
 * Calls tell it for free: every upstream request that got an HTTP response says "up", every one that
 * could not connect or timed out says "down". Only when no request has told it for an interval does a
 * probe (a HEAD of the base URL) ask, so an instance under load adds no upstream traffic of its own.
 */

export interface UpstreamHealthState {
  /** Null until the first request or probe has told. */
  readonly up: boolean | null;
  /** Epoch ms of what told it last. */
  readonly checkedAt: number | null;
  /** `request` (a call's upstream request) or `probe`. */
  readonly source: 'request' | 'probe' | null;
  /** Why it is down: the failure's reason and code, e.g. `upstream_unreachable (ECONNREFUSED)`. */
  readonly problem: string | null;
  /** Epoch ms of the last time it was up. */
  readonly lastUpAt: number | null;
}

export interface UpstreamHealth {
  state(): UpstreamHealthState;
  /** Takes what an upstream request showed (its outcome as the outbound client reports it). */
  observe(seen: UpstreamObservation): void;
  /** Probes now unless a request or probe has told within the interval; resolves to whether it is up. */
  check(): Promise<boolean>;
  /** Probes every interval from now on (the app starts it once it listens). */
  start(): void;
  close(): void;
}

export interface UpstreamHealthOptions {
  /** Whether the upstream answers at all (any HTTP status). */
  readonly probe: () => Promise<boolean>;
  readonly intervalMs: number;
  readonly registry: Registry;
  /** Epoch ms; `Date.now` when not given. */
  readonly now?: () => number;
}

/** Outcomes of a request that reached no HTTP response from the upstream. */
const DOWN: ReadonlySet<UpstreamObservation['outcome']> = new Set(['upstream_unreachable', 'upstream_timeout']);

export function createUpstreamHealth({ probe, intervalMs, registry, now = Date.now }: UpstreamHealthOptions): UpstreamHealth {
  let state: UpstreamHealthState = { up: null, checkedAt: null, source: null, problem: null, lastUpAt: null };
  let probing: Promise<boolean> | null = null;

  // Registered once something has told: a gauge without labels cannot be absent otherwise, and a 0
  // or 1 before anyone knows would be a guess on the dashboard.
  const gauges = [
    new Gauge({
      name: 'upstream_up',
      help:
        'Whether the .cp upstream answered the last request or probe (1) or could not be reached in time (0); absent until either ' +
        'has told.',
      registers: [],
      collect() {
        this.set(state.up ? 1 : 0);
      },
    }),
    new Gauge({
      name: 'upstream_last_checked_timestamp_seconds',
      help: 'When a request or probe last told whether the .cp upstream answers (Unix time).',
      registers: [],
      collect() {
        this.set((state.checkedAt ?? 0) / 1000);
      },
    }),
  ];

  const tell = (up: boolean, source: 'request' | 'probe', problem: string | null): void => {
    const at = now();
    if (state.up === null) for (const gauge of gauges) registry.registerMetric(gauge);
    state = { up, checkedAt: at, source, problem: up ? null : problem, lastUpAt: up ? at : state.lastUpAt };
  };

  const check = (): Promise<boolean> => {
    if (state.checkedAt !== null && now() - state.checkedAt < intervalMs) return Promise.resolve(state.up === true);
    probing ??= probe()
      .catch(() => false)
      .then((up) => {
        tell(up, 'probe', 'the probe got no HTTP response in time');
        probing = null;
        return up;
      });
    return probing;
  };

  let timer: NodeJS.Timeout | null = null;

  return {
    state: () => state,
    start() {
      // It only keeps the state fresh while no calls do, and never keeps the process alive.
      timer ??= setInterval(() => void check(), intervalMs).unref();
    },
    observe(seen) {
      // A request the call gave up on says nothing of the upstream; a page refused for its content says it answered.
      if (seen.outcome === 'cancelled') return;
      const down = DOWN.has(seen.outcome) && seen.status === null;
      tell(!down, 'request', down ? `${seen.outcome}${seen.code === null ? '' : ` (${seen.code})`}` : null);
    },
    check,
    close() {
      if (timer !== null) clearInterval(timer);
      timer = null;
    },
  };
}
