import { randomUUID } from 'node:crypto';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Config } from '../config/schema.js';
import { failureReason, UpstreamBusy, UpstreamError } from '../errors.js';
import { UPSTREAM_ENDPOINTS, type UpstreamPath } from '../operations.js';
import {
  fetchOptionsWith,
  PAGE_SOURCES,
  type FetchOptions,
  type FetchPage,
  type Interceptor,
  type PageSource,
  type ResponseCaching,
} from '../outbound/fetch.js';
import type { Shared } from '../redis/shared.js';
import type { UpstreamRequest } from '../translate/plan.js';
import { ownedPage, type CompactDocument, type Page } from '../xml/compact.js';
import { deadlinesOf, longestServedSeconds } from './freshness.js';
import { pageKey } from './key.js';
import type { CachedPage } from './entry.js';
import { createKeySharing } from './sharing.js';
import { fleetPages, MemoryPages, pageOf, type FleetPages } from './store.js';

/**
 * The page cache (docs/operating.md, "Page cache"): the outermost layer of the fetch pipeline
 * (src/outbound/fetch.ts). A page is asked of it by its exact upstream request and served, in this order:
 *
 * - **hit**: fresh in this instance's memory or in Redis; no upstream request.
 * - **stale**: past its freshness but within stale-while-revalidate: served as it is while one
 *   background request (through the layers inside the cache, counted for no call) refreshes it, one per key in the
 *   instance and, through the fleet's lock, in the fleet.
 * - **revalidated**: past that, with a validator: a conditional request answered 304 Not Modified.
 * - **miss**: fetched, and kept when it is compact bytes (a page the fast path could not take, a tree,
 *   passes uncached) and the upstream allows it.
 * - **coalesced**: another call of this instance, or another instance (Redis lock, then its page),
 *   was fetching the same page; it is that request's page.
 * - **stale** again when the request fails for the upstream's sake (down, timeout, 5xx, or over its
 *   budget: `UpstreamBusy`) and the page is within stale-if-error; past it, the call gets its fault.
 *
 * Shared across keys (`cache.shareAcrossKeys`), a request is asked under the shared key only when
 * src/cache/sharing.ts allows it (an appKey the upstream has not refused lately), else under its own.
 */

export interface PageCache {
  /**
   * The cache's layer: what it cannot serve is fetched through `next` with the call's options; its
   * tally hears how each page was served. While `cache.enabled` is off, every page is fetched, a miss.
   */
  readonly intercept: Interceptor;
  /** Stops background refreshes and waits for what is being written. */
  close(): Promise<void>;
}

export interface PageCacheOptions {
  /**
   * The running configuration, read per page for what a reload may change (freshness, sharing across
   * keys, the call timeout of a refresh); the upstream, the key's secret and the memory size once.
   */
  readonly settings: () => Pick<Config, 'cache' | 'upstream' | 'deprecation'>;
  readonly shared: Shared;
  readonly registry: Registry;
  readonly log: { debug(fields: object, message: string): void };
  /** Epoch milliseconds; `Date.now` when not given. */
  readonly now?: () => number;
}

/**
 * How long an instance that missed a page another instance is fetching waits for it to land in Redis
 * before it fetches the page itself.
 */
const FLEET_WAIT_MS = 3000;

/** A request of a page that has not come yet, with how it came for whoever started it. */
interface Fetched {
  readonly page: Page;
  readonly result: 'miss' | 'revalidated' | 'coalesced';
}

/**
 * One upstream request (or one wait for the fleet's) shared by every call of this instance that
 * wants its page meanwhile. A call whose own signal aborts leaves without cancelling it; the last to
 * leave does. A background refresh (`detached`) is cancelled only when the cache closes.
 */
class Flight {
  readonly promise: Promise<Fetched>;
  readonly #controller = new AbortController();
  readonly #detached: boolean;
  #waiting = 0;

  constructor(run: (signal: AbortSignal) => Promise<Fetched>, detached: boolean) {
    this.#detached = detached;
    this.promise = run(this.#controller.signal);
    // Whoever waits hears a failure; one nobody waits for any more is no unhandled rejection.
    this.promise.catch(() => {});
  }

  /** Cancelled by the last to leave, and settling: a call that comes now starts a request of its own. */
  get cancelled(): boolean {
    return this.#controller.signal.aborted;
  }

  join(signal: AbortSignal): Promise<Fetched> {
    if (signal.aborted) return Promise.reject(signal.reason);
    this.#waiting++;
    return new Promise<Fetched>((resolve, reject) => {
      const leave = (): void => {
        this.#waiting--;
        if (this.#waiting === 0 && !this.#detached) this.#controller.abort(signal.reason);
        reject(signal.reason);
      };
      signal.addEventListener('abort', leave, { once: true });
      const settle = (): void => {
        signal.removeEventListener('abort', leave);
        this.#waiting--;
      };
      this.promise.then(
        (fetched) => {
          settle();
          resolve(fetched);
        },
        (err: unknown) => {
          settle();
          reject(err);
        },
      );
    });
  }
}

/** A failure a stale page may stand in for: the upstream's, not the call's (its input, a 4xx, a page that does not fit). */
export function staleMayStandIn(err: unknown): boolean {
  if (err instanceof UpstreamBusy) return true;
  if (!(err instanceof UpstreamError)) return false;
  if (err.reason === 'upstream_timeout' || err.reason === 'upstream_unreachable') return true;
  return err.status !== null && err.status >= 500 && err.status <= 599;
}

/** A failure of the request's appKey rather than of the upstream or the page: a 4xx, or its budget. */
function failedForItsKey(err: unknown): boolean {
  if (err instanceof UpstreamBusy) return true;
  return err instanceof UpstreamError && err.status !== null && err.status >= 400 && err.status < 500;
}

export function createPageCache({ settings, shared, registry, log, now = Date.now }: PageCacheOptions): PageCache {
  const config = settings();
  const keyOf = pageKey({ baseUrl: config.upstream.baseUrl ?? '', hashOf: shared.hashOf });
  const memory = new MemoryPages(config.cache.maxBytes);
  const fleet = shared.configured
    ? fleetPages(shared, {
        maxPageBytes: config.upstream.maxResponseBytes,
        now,
        deadlines: (path, storedAt, caching) => deadlinesOf(storedAt, settings().cache.endpoints[path], caching),
      })
    : null;
  const sharing = createKeySharing({
    shared,
    memoryMs: () => longestServedSeconds(settings().cache.endpoints) * 1000,
    active: () => settings().cache.shareAcrossKeys,
    now,
  });
  const flights = new Map<string, Flight>();
  /** Writes to Redis and lock releases under way, awaited on close. */
  const pending = new Set<Promise<unknown>>();
  const closing = new AbortController();

  const results = new Counter({
    name: 'upstream_cache_results_total',
    help:
      'Upstream pages asked of the page cache, by endpoint and how each was served: hit (fresh), miss (fetched), stale (past its ' +
      'freshness, refreshed in the background or standing in for a failed request), revalidated (304 Not Modified), coalesced (fetched ' +
      'by another call or instance).',
    labelNames: ['endpoint', 'result'] as const,
    registers: [registry],
  });
  const staleIfError = new Counter({
    name: 'upstream_cache_stale_if_error_total',
    help:
      'Stale pages served instead of a fault because the upstream failed (unreachable, timed out, 5xx, or over its budget), by ' +
      'endpoint.',
    labelNames: ['endpoint'] as const,
    registers: [registry],
  });
  // Every series from the start, at 0: a rate over them is 0, not "no data".
  for (const endpoint of Object.keys(UPSTREAM_ENDPOINTS) as UpstreamPath[]) {
    for (const result of PAGE_SOURCES) results.inc({ endpoint, result }, 0);
    staleIfError.inc({ endpoint }, 0);
  }
  new Gauge({
    name: 'upstream_cache_memory_bytes',
    help: "Bytes of pages this instance's page cache holds in memory (cache.maxBytes at most).",
    registers: [registry],
    collect() {
      this.set(memory.bytes);
    },
  });

  const track = (promise: Promise<unknown>): void => {
    const settled = promise.catch(() => {});
    pending.add(settled);
    void settled.finally(() => pending.delete(settled));
  };

  /** A cached page as a call gets it: kept (its replies with it) while this instance's memory holds it. */
  function served(key: string, cached: CachedPage): CompactDocument {
    return pageOf(cached, memory.holds(key, cached));
  }

  /** Of the page this instance holds for `key` and the one Redis holds, the newer, kept here. */
  async function newerInFleet(
    fleet: FleetPages,
    key: string,
    request: UpstreamRequest,
    held: CachedPage | null,
  ): Promise<CachedPage | null> {
    const remote = await fleet.get(key, request.path);
    if (remote === null || (held !== null && remote.storedAt <= held.storedAt)) return held;
    memory.set(key, remote);
    return remote;
  }

  /** A page of the root the endpoint answers with: one of another root is none (the upstream's answers may have changed). */
  function servable(cached: CachedPage | null, request: UpstreamRequest): CachedPage | null {
    return cached !== null && cached.rootName === config.upstream.answers[request.path].root ? cached : null;
  }

  /** Keeps a page the upstream sent (or confirmed with a 304); resolves once Redis has it too. */
  function keep(key: string, path: UpstreamPath, page: Page, caching: ResponseCaching | null, previous: CachedPage | null): Promise<void> {
    if (page.type !== 'compact') return Promise.resolve();
    const storedAt = now();
    const deadlines = deadlinesOf(storedAt, settings().cache.endpoints[path], caching);
    if (deadlines === null) {
      memory.delete(key);
      return Promise.resolve();
    }
    const cached: CachedPage = {
      ...deadlines,
      bytes: page.bytes,
      rootName: page.rootName,
      storedAt,
      etag: caching?.etag ?? previous?.etag ?? null,
      lastModified: caching?.lastModified ?? previous?.lastModified ?? null,
      // What the deadlines came from: Redis keeps these, and a page read back gets its deadlines from them.
      cacheControl: caching?.cacheControl ?? null,
      ageSeconds: caching?.ageSeconds ?? 0,
    };
    memory.set(key, cached);
    return fleet === null ? Promise.resolve() : fleet.put(key, cached, storedAt);
  }

  /** The upstream's page, conditional on the validators of the one held; `stored` settles once it is kept. */
  async function fromUpstream(
    key: string,
    request: UpstreamRequest,
    cached: CachedPage | null,
    fetch: FetchPage,
    options: FetchOptions,
  ): Promise<{ fetched: Fetched; stored: Promise<void> }> {
    let caching: ResponseCaching | null = null;
    const conditional =
      cached !== null && (cached.etag !== null || cached.lastModified !== null)
        ? { etag: cached.etag, lastModified: cached.lastModified, page: served(key, cached) }
        : undefined;
    const revalidation = {
      ...(conditional === undefined ? {} : { conditional }),
      responded: (heard: ResponseCaching) => {
        caching = heard;
      },
    };
    const fetched = await fetch(request, fetchOptionsWith(options, { revalidation }));
    const revalidated = conditional !== undefined && fetched === conditional.page;
    // Held by the cache and by every call coalesced on it: out of the pool (src/xml/pool.ts), exactly its size.
    const page = revalidated ? fetched : ownedPage(fetched);
    const stored = keep(key, request.path, page, caching, revalidated ? cached : null);
    return { fetched: { page, result: revalidated ? 'revalidated' : 'miss' }, stored };
  }

  /**
   * The page from the upstream, fetched by one instance of the fleet: the one that takes the lock;
   * the others wait for its page in Redis, and fetch it themselves when none comes in time.
   */
  async function fetchOnce(
    key: string,
    request: UpstreamRequest,
    cached: CachedPage | null,
    fetch: FetchPage,
    options: FetchOptions,
  ): Promise<Fetched> {
    if (fleet === null) {
      const { fetched, stored } = await fromUpstream(key, request, cached, fetch, options);
      track(stored);
      return fetched;
    }
    const token = randomUUID();
    if (!(await fleet.lock(key, token, settings().cache.lockTtlMs))) {
      // Also over once the lock is gone: a holder killed mid-fetch delays the others at most its lock's TTL.
      const landed = await fleet.waitFor(key, request.path, cached?.storedAt ?? 0, FLEET_WAIT_MS, options.signal);
      if (landed !== null && landed.rootName === config.upstream.answers[request.path].root) {
        memory.set(key, landed);
        return { page: served(key, landed), result: 'coalesced' };
      }
      const { fetched, stored } = await fromUpstream(key, request, cached, fetch, options);
      track(stored);
      return fetched;
    }
    let stored: Promise<void> = Promise.resolve();
    try {
      // Another instance may have put the page in and let the lock go between this one's look-up
      // and its lock: then it is that page, not one more upstream request.
      const landed = await fleet.get(key, request.path);
      if (
        landed !== null &&
        landed.storedAt > (cached?.storedAt ?? 0) &&
        now() < landed.freshUntil &&
        landed.rootName === config.upstream.answers[request.path].root
      ) {
        memory.set(key, landed);
        return { page: served(key, landed), result: 'coalesced' };
      }
      const fromHere = await fromUpstream(key, request, cached, fetch, options);
      stored = fromHere.stored;
      return fromHere.fetched;
    } finally {
      // Released once the page is in Redis, so that a waiting instance finds it there.
      track(stored.finally(() => fleet.unlock(key, token)));
    }
  }

  function startFlight(key: string, run: (signal: AbortSignal) => Promise<Fetched>, detached: boolean): Flight {
    const flight = new Flight(run, detached);
    flights.set(key, flight);
    const done = flight.promise.then(
      () => {},
      () => {},
    );
    track(done);
    void done.finally(() => {
      if (flights.get(key) === flight) flights.delete(key);
    });
    return flight;
  }

  /** One background refresh of a stale page, unless a request for it is already under way here. */
  function refresh(key: string, request: UpstreamRequest, cached: CachedPage, fetch: FetchPage, call: FetchOptions): void {
    if (flights.has(key) || closing.signal.aborted) return;
    const { callTimeoutMs } = settings().upstream;
    // Traced as a span of its own, linked to the page that set it off: it outlives that call.
    const background = call.trace?.background(`refresh GET ${request.path}`);
    const flight = startFlight(
      key,
      (signal) =>
        fetchOnce(key, request, cached, fetch, {
          requestId: call.requestId,
          appKey: call.appKey,
          deadline: Date.now() + callTimeoutMs,
          signal: AbortSignal.any([signal, closing.signal, AbortSignal.timeout(callTimeoutMs)]),
          tally: null,
          ...(background === undefined ? {} : { trace: background.trace }),
        }),
      true,
    );
    flight.promise.then(
      () => background?.end(null),
      (err: unknown) => {
        background?.end(failureReason(err));
        log.debug(
          { event: 'cache_refresh_failed', path: request.path, reason: err instanceof Error ? err.name : String(err) },
          'background refresh failed',
        );
      },
    );
  }

  async function fetchPage(request: UpstreamRequest, options: FetchOptions, fetch: FetchPage): Promise<{ page: Page; result: PageSource }> {
    const acrossKeys = settings().cache.shareAcrossKeys && sharing.mayShare(options.appKey);
    const key = keyOf(request, acrossKeys);
    // The page this instance or the fleet holds, the newer of the two. Redis is asked only when this
    // instance holds none fresh, so that a hit in memory waits on nothing.
    const held = memory.get(key) ?? null;
    const asksFleet = fleet !== null && (held === null || now() >= held.freshUntil);
    const cached = servable(asksFleet ? await newerInFleet(fleet, key, request, held) : held, request);
    const at = now();
    if (cached !== null && at < cached.freshUntil) return { page: served(key, cached), result: 'hit' };
    if (cached !== null && at < cached.staleWhileRevalidateUntil) {
      refresh(key, request, cached, fetch, options);
      return { page: served(key, cached), result: 'stale' };
    }
    // Not before: a page served from the cache waits on nothing, and the call's signal is made when read.
    const { signal } = options;
    try {
      const flying = flights.get(key);
      // Not one its last caller left: that one fails with that caller's reason, not this one's.
      if (flying === undefined || flying.cancelled)
        return await startFlight(
          key,
          (own) => fetchOnce(key, request, cached, fetch, fetchOptionsWith(options, { signal: own })),
          false,
        ).join(signal);
      try {
        return { page: (await flying.join(signal)).page, result: 'coalesced' };
      } catch (err) {
        // Shared across keys, the request joined was another caller's, with its appKey: what that key
        // may not do (a 4xx, its budget) is not this caller's answer. Its own request, then.
        if (!acrossKeys || !failedForItsKey(err) || signal.aborted) throw err;
        const { fetched, stored } = await fromUpstream(key, request, cached, fetch, options);
        track(stored);
        return fetched;
      }
    } catch (err) {
      if (cached !== null && !signal.aborted && staleMayStandIn(err) && now() < cached.staleIfErrorUntil) {
        staleIfError.inc({ endpoint: request.path });
        return { page: served(key, cached), result: 'stale' };
      }
      throw err;
    }
  }

  return {
    intercept(next) {
      const watched = sharing.watch(next);
      return async (request, options) => {
        if (!settings().cache.enabled) {
          const page = await next(request, options);
          options.tally?.page('miss');
          return page;
        }
        const { page, result } = await fetchPage(request, options, watched);
        results.inc({ endpoint: request.path, result });
        options.tally?.page(result);
        return page;
      };
    },
    async close() {
      sharing.close();
      closing.abort(new Error('the page cache is closing'));
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}
